// The pure logic (src/types, model, magic, errors, requests, format, state) is tested in node: it imports nothing
// from JupyterLab at runtime.
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  testRegex: '/__tests__/.*\\.spec\\.ts$',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  }
};
