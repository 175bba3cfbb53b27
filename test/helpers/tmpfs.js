'use strict'
// A real small file system for a test: a tmpfs of `size` mounted on a
// fresh directory (read-only with `readOnly`) (needs root and mount rights), unmounted by t.after.
// `{ dir, root }` (dir: a path inside it, not created), or `{ reason }`
// when it cannot be mounted here: the test skips with that reason.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

function mountTmpfs (t, size, { readOnly = false } = {}) {
  if (process.getuid && process.getuid() !== 0) return { dir: null, reason: 'mounting a tmpfs needs root' }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-tmpfs-'))
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}${readOnly ? ',ro' : ''}`, 'tmpfs', root], { encoding: 'utf8' })
  if (mounted.status !== 0) {
    fs.rmdirSync(root)
    return { dir: null, reason: `cannot mount a tmpfs here: ${(mounted.stderr || String(mounted.error)).trim()}` }
  }
  t.after(() => {
    spawnSync('umount', ['-l', root]) // lazy: a file the test left open does not keep it mounted
    fs.rmdirSync(root)
  })
  return { dir: path.join(root, 'buffer'), root }
}

// What the file system has free for writing, as df counts it (an oracle
// independent of the journal's own figures).
function dfAvailable (dir) {
  const out = spawnSync('df', ['-B1', '--output=avail', dir], { encoding: 'utf8' }).stdout
  return Number(out.trim().split('\n').pop())
}

module.exports = { mountTmpfs, dfAvailable }
