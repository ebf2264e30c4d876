// Globals a newer Node defines, given to the venue's threads on Node 20. Imported first by
// every thread's entry (runtime/venue-start.mjs, runtime/worker-bootstrap.mjs). Thread plumbing
// only, like ring.ts: no domain code.
//
// `navigator` (Node 21 and later define it, with `userAgent` "Node.js/<major>"): pg asks,
// when its module loads, whether it runs in a Cloudflare Worker, by navigator.userAgent
// where `navigator` is defined, else by constructing a `Response`; on Node 20 that loads
// Node's whole fetch implementation (undici) into the thread. Measured here: pg loaded in
// 182-214 ms without it, 56-76 ms with it (node -e, 3 pairs), in each of the three threads
// that use pg (main, persistence, read); 276 ms of the read thread in a profiled start.
// Among the venue's packages only pg and tinybench read it, both as that runtime check.
if (globalThis.navigator === undefined) {
  Object.defineProperty(globalThis, 'navigator', {
    value: Object.freeze({ userAgent: `Node.js/${process.versions.node.split('.')[0]}` }),
    writable: true,
    configurable: true,
    enumerable: false,
  });
}
