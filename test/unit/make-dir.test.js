'use strict'

const { test } = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { makeDir, PRIVATE_DIR } = require('../../lib/shared/make-dir')
const { writeStats, writeFailure } = require('../../app/stats-file')
const { removeDir } = require('../helpers/temp-dir')

test('makeDir creates the missing levels and accepts an existing directory', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => removeDir(root))
  const deep = path.join(root, 'a', 'b', 'c')
  assert.strictEqual(makeDir(deep), deep)
  assert.ok(fs.statSync(deep).isDirectory())
  assert.strictEqual(makeDir(deep), deep, 'again: nothing to do')
})

test('makeDir names a file in the way (ENOTDIR)', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => removeDir(root))
  fs.writeFileSync(path.join(root, 'file'), 'x')
  assert.throws(() => makeDir(path.join(root, 'file', 'db')), (err) => err.code === 'ENOTDIR' && err.message === `${path.join(root, 'file')} exists and is not a directory`)
})

test('makeDir fails where recursive mkdir loops forever (a directory under /proc)', { skip: !fs.existsSync('/proc/self') && 'no /proc here' }, () => {
  assert.throws(() => makeDir('/proc/collector-cluster-test/db'), (err) => err.code === 'ENOENT')
})

test('makeDir gives the levels it creates the mode asked for, and leaves an existing directory as the operator set it', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => removeDir(root))
  const existing = path.join(root, 'shared')
  fs.mkdirSync(existing, { mode: 0o755 })
  fs.chmodSync(existing, 0o755)
  const deep = path.join(existing, 'data', 'db')
  makeDir(deep, PRIVATE_DIR)
  assert.strictEqual(fs.statSync(path.join(existing, 'data')).mode & 0o777, 0o700)
  assert.strictEqual(fs.statSync(deep).mode & 0o777, 0o700)
  assert.strictEqual(fs.statSync(existing).mode & 0o777, 0o755)
})

test('stats and failure files are readable by their owner only, in a directory only the owner can enter', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => removeDir(root))
  const dir = path.join(root, 'collector-stats')
  const file = await writeStats(dir, { name: 'c1', received: 1 })
  fs.writeFileSync(path.join(dir, 'c1.failed'), '{}', { mode: 0o644 }) // left by an older version
  await writeFailure(dir, 'c1', new Error('boom'))
  assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
  assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
  assert.strictEqual(fs.statSync(path.join(dir, 'c1.failed')).mode & 0o777, 0o600)
})
