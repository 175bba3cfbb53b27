'use strict'
// A disk buffer directory of its own for one collector of a test (the CLI's
// collectors buffer by default, under the PM2 home: tests must not share
// one, nor replay what another test left). Removed after the test.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

function tempBufferDir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-buffer-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

module.exports = { tempBufferDir }
