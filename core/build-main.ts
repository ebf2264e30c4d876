// Builds the venue's main module for core/venue-start.mjs (`npm start`), which runs this
// when it finds no current build: `node --import tsx core/build-main.ts`.
import { buildMain } from './worker-build.ts';

await buildMain();
