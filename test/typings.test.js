'use strict'
// index.d.ts is what TypeScript users compile against: it must compile under
// --strict, and a collector written from it alone (test/types/consumer.ts)
// must type-check, so a broken declaration fails here, not in a user's build.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFile } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const TSC = require.resolve('typescript/bin/tsc')

function tsc (args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, '--noEmit', '--strict', '--types', 'node', ...args], { cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, output: `${stdout}${stderr}` })
    })
  })
}

test('index.d.ts compiles under --strict', { timeout: 120000 }, async () => {
  const { code, output } = await tsc(['index.d.ts'])
  assert.equal(code, 0, output)
})

test('a collector written against the typings type-checks (Worker acknowledgement API, stats, config)', { timeout: 120000 }, async () => {
  const { code, output } = await tsc(['--module', 'commonjs', '--target', 'es2022', '--esModuleInterop', path.join('test', 'types', 'consumer.ts')])
  assert.equal(code, 0, output)
})
