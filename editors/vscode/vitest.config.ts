import * as path from 'path';
import { defineConfig } from 'vitest/config';

// The `vscode` module exists only inside the editor; tests get the fake.
export default defineConfig({
  resolve: { alias: { vscode: path.resolve(__dirname, 'test/fake/vscode.ts') } },
  test: {
    environment: 'node',
    testTimeout: 20000,
    hookTimeout: 30000,
    reporters: ['default'],
    // Integration suites start real processes; never run two at once on 2 cores.
    fileParallelism: false,
  },
});
