'use strict'
// A disk buffer directory of its own for one collector of a test (the CLI's
// collectors buffer by default, under the PM2 home: tests must not share
// one, nor replay what another test left). Removed after the test.
const { tempDir } = require('./temp-dir')

function tempBufferDir (t) {
  return tempDir(t, 'collector-buffer-')
}

module.exports = { tempBufferDir }
