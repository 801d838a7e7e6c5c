// Loaded with `node -r` by benchmarks: records the process's peak memory when it exits.
const fs = require('node:fs');
const out = process.env.GRANULE_BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    fs.writeFileSync(out, String(process.resourceUsage().maxRSS * 1024));
  });
}
