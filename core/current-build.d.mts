/** See core/current-build.mjs. */
export function currentBuild(indexFile: string, module: string): string | null;
