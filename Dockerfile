# syntax=docker/dockerfile:1
# One image per service, all from one build:
#   docker build --target orchestrator -t granule/orchestrator .
# Targets: config-store (also runs `migrate`), graph-planner, orchestrator, node-agent.
# Settings are the GRANULE_* variables of the README; nothing is baked in but the health port.
# Credentials (NATS .creds, passwords in URLs, tokens) are mounted or passed at run time, never
# copied into an image. The services run as the image's user `node` (uid 1000); the node agent
# runs as root, as it does on a host, to run tasks (that image is for compose and tests).

# Node 24, a maintained LTS (Node 20's support ended in April 2026; typeorm needs >= 24.11).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# gcc: the node-agent's native spawn helper (ADR 0009), built by `npm run build`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json nx.json ./
COPY tools ./tools
COPY libs ./libs
COPY apps ./apps
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /opt/granule
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The basic release the config-store installs at its first start (GRANULE_PREINSTALLED_RELEASE).
COPY examples/releases ./examples/releases
COPY deploy/docker/healthcheck.cjs deploy/docker/auth-init.sh ./deploy/docker/
# The operator CLI as `granule` (compose's auth-init issues credentials with it).
RUN printf '#!/bin/sh\nexec node /opt/granule/dist/apps/cli/src/main.js "$@"\n' > /usr/local/bin/granule \
 && chmod 0755 /usr/local/bin/granule
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "deploy/docker/healthcheck.cjs", "/healthz"]

FROM runtime AS config-store
ENV GRANULE_HTTP_HOST=0.0.0.0 GRANULE_HEALTH_PORT=8411
EXPOSE 8410 8411
USER node
CMD ["node", "dist/apps/config-store/src/main.js"]

FROM runtime AS graph-planner
ENV GRANULE_HEALTH_PORT=8412
EXPOSE 8412
USER node
CMD ["node", "dist/apps/graph-planner/src/main.js"]

FROM runtime AS node-agent
# Task runners: puppet manifests and rsync; tasks run as root, as on a host (deploy/node-agent).
RUN apt-get update \
 && apt-get install -y --no-install-recommends puppet rsync openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV GRANULE_HEALTH_PORT=8414 GRANULE_ROOT=/var/lib/granule
VOLUME /var/lib/granule
EXPOSE 8414
CMD ["node", "dist/apps/node-agent/src/main.js"]

# Last, so a plain `docker build .` gives the orchestrator.
FROM runtime AS orchestrator
ENV GRANULE_HEALTH_PORT=8413
EXPOSE 8413
USER node
CMD ["node", "dist/apps/orchestrator/src/main.js"]
