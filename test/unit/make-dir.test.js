'use strict'

const { test } = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { makeDir } = require('../../lib/shared/make-dir')

test('makeDir creates the missing levels and accepts an existing directory', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const deep = path.join(root, 'a', 'b', 'c')
  assert.strictEqual(makeDir(deep), deep)
  assert.ok(fs.statSync(deep).isDirectory())
  assert.strictEqual(makeDir(deep), deep, 'again: nothing to do')
})

test('makeDir names a file in the way (ENOTDIR)', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'make-dir-'))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.writeFileSync(path.join(root, 'file'), 'x')
  assert.throws(() => makeDir(path.join(root, 'file', 'db')), (err) => err.code === 'ENOTDIR' && err.message === `${path.join(root, 'file')} exists and is not a directory`)
})

test('makeDir fails where recursive mkdir loops forever (a directory under /proc)', { skip: !fs.existsSync('/proc/self') && 'no /proc here' }, () => {
  assert.throws(() => makeDir('/proc/collector-cluster-test/db'), (err) => err.code === 'ENOENT')
})
