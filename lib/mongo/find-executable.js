'use strict'

const fs = require('node:fs')
const path = require('node:path')

/**
 * Looks `name` up on PATH like a shell would.
 * @param {string} name
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string|null} absolute path of the executable, or null
 */
function findExecutable (name, env = process.env) {
  const dirs = String(env.PATH || '').split(path.delimiter).filter(Boolean)
  for (const dir of dirs) {
    const candidate = path.join(dir, name)
    if (isExecutableFile(candidate)) return candidate
  }
  return null
}

/**
 * True when `file` is a regular file this process may execute.
 * @param {string} file
 * @returns {boolean}
 */
function isExecutableFile (file) {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

module.exports = { findExecutable, isExecutableFile }
