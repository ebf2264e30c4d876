// Builds the venue's main module for runtime/venue-start.mjs (`npm start`), which runs this
// when it finds no current build: `node --import tsx runtime/build-main.ts`.
import { buildMain } from './worker-build.ts';

await buildMain();
