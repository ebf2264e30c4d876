// Entry point of `npm start`. The HTTP order-entry plane (gateway threads, rings,
// shard workers) is issue 3 and not built yet; until it lands this says so plainly
// instead of pretending to serve.
console.error('The venue has no HTTP order entry yet: the matching core is built (see README.md), the gateway is next.');
process.exitCode = 1;
