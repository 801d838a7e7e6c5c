#!/usr/bin/env node
// Container health check: GET http://127.0.0.1:$GRANULE_HEALTH_PORT<path> (default /healthz),
// exit 0 on 200 and 1 otherwise. Images have no curl; node is there.
const http = require('node:http');

const port = Number(process.env.GRANULE_HEALTH_PORT || process.argv[3] || 0);
const path = process.argv[2] || '/healthz';
if (!port) {
  process.stderr.write('healthcheck: GRANULE_HEALTH_PORT is not set (or 0: the health server is off)\n');
  process.exit(1);
}
const req = http.get({ host: '127.0.0.1', port, path, timeout: 3000 }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (err) => {
  process.stderr.write(`healthcheck: ${err.message}\n`);
  process.exit(1);
});
