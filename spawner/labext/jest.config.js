// The extension's logic (pure functions and the repeat loop), tested with ts-jest in jsdom; what the page
// does with it is tested in a real browser by tests/browser/ (pytest + Playwright) against the dev cluster.
module.exports = {
  testEnvironment: 'jsdom',
  testRegex: 'src/.*/.*\\.spec\\.ts$',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  },
  collectCoverageFrom: ['src/**/*.ts', '!src/**/*.d.ts'],
  coverageReporters: ['text']
};
