# finevo-verify: the CI regression gate for the finevo agent, as one self-contained image.
#
#   docker build -t finevo-verify .
#   docker run --rm --init --network none --user "$(id -u):$(id -g)" \
#       -v "$PWD/reports:/out" finevo-verify                       # = run --llm reference --out /out
#
# Build arguments
#   BASE_IMAGE   any Debian-like image with python3 (>= 3.11) and the venv module; python3 is
#                looked up on PATH, so both python:3.11-slim (/usr/local/bin) and a debootstrap
#                image (/usr/bin) work. Without registry access: `bash scripts/setup-docker.sh`
#                builds finevo-base:bookworm from the machine's own Debian mirror.
#   WHEELHOUSE   optional directory *inside the build context* holding a wheel for every line of
#                requirements.lock and requirements-build.lock (scripts/setup-docker.sh
#                --wheelhouse .wheelhouse makes one there): then the build needs no network.
#                Empty: the same pinned wheels come from the package index.
#   VERSION, REVISION, CREATED, SOURCE   OCI labels; REVISION (the commit) is also FINEVO_GIT_SHA.
#   FINEVO_BUILD_ID   set by the launcher: labels the builder stage's image so that exactly this
#                build's leftover can be removed afterwards.
#
# Reproducible: the dependencies are installed from requirements.lock (every release pinned, every
# file's sha256 checked: pip --require-hashes), the build backend from requirements-build.lock;
# pyproject.toml keeps the ranges, `bash scripts/lock.sh` re-resolves both files.
#
# The legacy builder and BuildKit both build this file (no RUN --mount, no heredocs), so the
# Docker SDK's build API works too.

ARG BASE_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder

ARG WHEELHOUSE=""
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /build
# The wheelhouse when one is given, else a harmless stand-in (COPY needs a source either way).
COPY ${WHEELHOUSE:-requirements.lock} /wheelhouse/
COPY requirements.lock requirements-build.lock ./

# Dependencies first, in their own layer: it is rebuilt only when a lock file changes. The
# runtime venv gets exactly the locked wheels; the build backend goes to a venv of its own.
RUN if [ -n "$WHEELHOUSE" ]; then set -- --no-index --find-links /wheelhouse; fi \
 && python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --only-binary :all: "$@" -r requirements.lock \
 && python3 -m venv /opt/build \
 && /opt/build/bin/pip install --require-hashes --only-binary :all: "$@" -r requirements-build.lock

# Then the project itself, built into a wheel and installed without touching the dependencies.
COPY pyproject.toml README.md ./
COPY finevo ./finevo
COPY runner ./runner
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --no-index --wheel-dir /wheels/project . \
 && /opt/venv/bin/pip install --no-deps --no-index /wheels/project/*.whl \
 && /opt/venv/bin/pip check \
 && /opt/venv/bin/finevo-verify --help >/dev/null

# Lean venv: no installer, no bundled test suites of numpy/pandas. Bytecode stays (the venv is
# read-only at run time) except openai's (14 MB): only a live run imports the SDK, once per
# process, where compiling it (about 0.6 s) is small against the LLM calls; reference, replay and
# predictions runs and every sandboxed tool never import it (finevo/llm/providers.py).
RUN /opt/venv/bin/pip uninstall --yes --quiet setuptools wheel pip \
 && for pkg in numpy pandas; do \
        find /opt/venv/lib -path "*/site-packages/$pkg/*" -type d -name tests -prune -exec rm -rf {} + ; \
    done \
 && find /opt/venv/lib -path "*/site-packages/openai/*" -type d -name __pycache__ -prune -exec rm -rf {} +

# Last, so that a new id never invalidates the layers above.
ARG FINEVO_BUILD_ID=""
LABEL org.finevo.stage="builder" org.finevo.build-id="${FINEVO_BUILD_ID}"

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="finevo-verify" \
      org.opencontainers.image.description="CI regression gate for the finevo evolving financial agent" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="MIT"

# The image has no git: the commit it was built from is what results.json records as git_sha
# ("unknown" when built without REVISION counts as none; `docker run -e FINEVO_GIT_SHA=...` overrides).
# FINEVO_REQUIRE_ISOLATION=kernel: the gate gives no verdict (exit 3) unless Landlock and seccomp
# confine every tool -- both work under Docker's default seccomp profile, so run the image as
# documented, never with --privileged or seccomp=unconfined.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LANG=C.UTF-8 \
    HOME=/home/finevo \
    FINEVO_BENCHMARKS=/opt/finevo/benchmarks \
    FINEVO_REGISTRY_DIR=/tmp/finevo/registry \
    FINEVO_REQUIRE_ISOLATION=kernel \
    FINEVO_GIT_SHA=${REVISION}

# A fixed, unprivileged user; /out (the reports volume) belongs to it. The launcher runs the
# container as the caller's uid:gid instead, so reports on the host belong to the caller.
RUN groupadd --system --gid 10001 finevo \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/finevo --create-home \
        --shell /usr/sbin/nologin finevo \
 && mkdir -p /out \
 && chown 10001:10001 /out \
 && chmod 0775 /out

COPY --from=builder /opt/venv /opt/venv
# The suite, the bundled (synthetic) snapshot and the reference tools; the registry starts empty.
COPY benchmarks /opt/finevo/benchmarks

USER 10001:10001
WORKDIR /home/finevo
VOLUME ["/out"]
# The gate handles SIGTERM itself (partial reports, exit 143); `docker run --init` adds a reaper.
STOPSIGNAL SIGTERM
ENTRYPOINT ["finevo-verify"]
CMD ["run", "--llm", "reference", "--out", "/out"]
