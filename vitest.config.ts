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
    reporters: ['default'],
  },
})
