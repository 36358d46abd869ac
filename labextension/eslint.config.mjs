// ESLint flat config: the recommended rules of ESLint and typescript-eslint (with type information for src/),
// formatting left to Prettier (eslint-config-prettier turns off the rules it would fight).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig([
  globalIgnores(['lib/', 'node_modules/']),
  js.configs.recommended,
  {
    files: ['src/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: globals.browser,
      // tsconfig.test.json covers src/ and its tests
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname }
    }
  },
  {
    files: ['src/__tests__/**/*.ts'],
    languageOptions: { globals: { ...globals.node, ...globals.jest } }
  },
  {
    files: ['*.js'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node }
  },
  prettier
]);
