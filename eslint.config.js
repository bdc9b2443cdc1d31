// Lint: the recommended TypeScript rules plus a line limit. Formatting stays by hand (the code's
// alignment and one-line guards are deliberate); the limit keeps any one line readable in a diff.
import stylistic from '@stylistic/eslint-plugin'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', '.kafka/**', '.tmp/**', '.scratch/**', '**/.wrangler/**', 'src/edge/wasm/core.generated.ts', 'assembly/**'] },
  ...tseslint.configs.recommended,
  {
    // `_name` marks a parameter or binding kept for its position (a callback's signature, a tuple).
    rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }] },
  },
  {
    // Error messages and test titles stay one string each, so a message seen in a log greps to its line.
    files: ['**/*.ts'],
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/max-len': ['error', { code: 180, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreStrings: true, ignoreTemplateLiterals: true }],
    },
  },
)
