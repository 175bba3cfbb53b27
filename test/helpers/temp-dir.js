'use strict'
// A temporary directory removed after the test, by a hook that never throws.
// node:test runs a test's after hooks in the order they were added and skips
// the rest when one throws: a removal racing a process that still writes
// there (ENOTEMPTY) left the hooks after it undone, a collector unkilled and
// the test file (and CI) waiting on it for ever.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

function tempDir (t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  t.after(() => removeDir(dir))
  return dir
}

function removeDir (dir) {
  try {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 })
  } catch {}
}

module.exports = { tempDir, removeDir }
