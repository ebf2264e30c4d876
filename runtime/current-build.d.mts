/** See runtime/current-build.mjs. */
export const MAIN_BUILD_NAME: string;
export const MAIN_MODULE: string;
export function currentBuild(indexFile: string, modules: readonly string[]): { dir: string; inputs: Record<string, string> } | null;
