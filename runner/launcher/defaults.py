"""The docker launcher's defaults, in a module the command line can read without loading the launcher
(``finevo-verify --help`` shows them; :mod:`runner.launcher.container` uses them)."""

DEFAULT_IMAGE = "finevo-verify:local"
#: Seconds between the polite stop signal and SIGKILL.
DEFAULT_STOP_GRACE = 20.0
