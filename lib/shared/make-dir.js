'use strict'

const fs = require('node:fs')
const path = require('node:path')

/**
 * Creates `dir` and its missing parents, one level at a time.
 *
 * Not `fs.mkdirSync(dir, { recursive: true })`: on a parent where mkdir
 * answers ENOENT although the parent exists (under /proc, say), Node's
 * recursive mkdir loops forever instead of failing, and a collector given
 * such a --db-path or stats directory hung without a word.
 *
 * Levels it creates get `mode` (less the umask); existing ones are left as
 * they are: a directory the operator made is theirs to set.
 *
 * @param {string} dir
 * @param {number} [mode] of the levels created (0o700 for directories that hold data)
 * @returns {string} the directory, resolved
 * @throws {NodeJS.ErrnoException} the first level that failed (ENOTDIR for a file in the way, EACCES, ENOENT, ...)
 */
function makeDir (dir, mode = 0o777) {
  const target = path.resolve(dir)
  const missing = []
  for (let at = target; !isDirectory(at); at = path.dirname(at)) {
    if (path.dirname(at) === at) break // the root: let mkdir say why
    missing.unshift(at)
  }
  for (const level of missing) {
    try {
      fs.mkdirSync(level, { mode })
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      if (!isDirectory(level)) throw Object.assign(new Error(`${level} exists and is not a directory`), { code: 'ENOTDIR', path: level })
    }
  }
  return target
}

function isDirectory (dir) {
  try {
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}

/** The mode of directories and files that hold collected data or its counters: the owner's only. */
const PRIVATE_DIR = 0o700
const PRIVATE_FILE = 0o600

module.exports = { makeDir, PRIVATE_DIR, PRIVATE_FILE }
