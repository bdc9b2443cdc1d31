import { defineConfig } from 'vitest/config'

// Two cores and real brokers: test files run one after another; Kafka-backed suites share the
// clusters started by the global setup, which also stops them when the run ends.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // The JSON report keeps each file's duration, so the CI budget (45 min) can be watched per suite.
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-report.json' },
  },
})
