// `npm run lint`: ESLint's and typescript-eslint's recommended rules, plus the type-aware
// promise rules that catch a rejection nobody handles and a promise handed to a caller that
// ignores it. Prettier owns the layout, so no formatting rule is set here.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '.build/',
      '.data/',
      '.scratch/',
      'bench/results/',
      'gateway/validators.generated.ts', // written by gateway/validators-build.ts
      'test/core/fixtures/inlining-probe.mjs', // V8 natives syntax (%OptimizeFunctionOnNextCall), not JavaScript
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          // The .mjs entry files are outside tsconfig.json; a default project gives them types.
          allowDefaultProject: ['*.js', 'runtime/*.mjs', 'bench/lib/*.mjs'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test() and describe() return promises that the runner itself awaits.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // `_`-prefixed parameters keep a callback's signature; a rest sibling drops the fields named beside it.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/summary.ts'],
    // These read JSON (the venue's answers, the benchmark results) whose shape is what they assert or print.
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    // TypeScript does not check names in plain JavaScript; these are the Node globals the entry files use.
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setInterval: 'readonly', clearInterval: 'readonly' } },
  },
);
