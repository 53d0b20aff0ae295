# syntax=docker/dockerfile:1
# Weft: multi-stage build. The build stage installs every dependency (native better-sqlite3
# included) and bundles src/ into dist/ (esbuild); the runtime stage keeps production dependencies and
# dist/ only, runs as a non-root user, and keeps its data in the DATA_DIR volume.

FROM node:26-trixie-slim AS build
WORKDIR /app
# better-sqlite3 builds from source when no prebuilt binary can be fetched
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:26-trixie-slim AS runtime
# git: the repositories are bare git repositories served through git's smart HTTP backend
RUN apt-get update \
 && apt-get install -y --no-install-recommends git tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 weft \
 && useradd --system --uid 10001 --gid weft --home-dir /data --shell /usr/sbin/nologin weft \
 && mkdir -p /data && chown weft:weft /data
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY LICENSE README.md ./
USER weft
VOLUME ["/data"]
EXPOSE 3000 2222
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini as PID 1 forwards SIGTERM to node, which drains (README "Deploying")
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--v8-pool-size=1", "dist/main.js"]
