"""finevo-verify: the containerized CI regression gate for the finevo agent."""
