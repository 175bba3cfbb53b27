'use strict'

const os = require('node:os')
const path = require('node:path')

/**
 * Where a collector keeps its state between runs: the PM2 home (pm2Home,
 * then $PM2_HOME, then ~/.pm2), whether it runs under PM2 or in the
 * foreground, so `collector run` and `collector start` of one name find the
 * same stats file and disk buffer.
 * @param {{ env?: object, pm2Home?: string }} [options]
 */
function stateHome ({ env = process.env, pm2Home } = {}) {
  return path.resolve(pm2Home || env.PM2_HOME || path.join(os.homedir(), '.pm2'))
}

/** The default disk buffer of the collector `name`: <state home>/collector-buffer/<name>. */
function defaultBufferDir (name, options) {
  return path.join(stateHome(options), 'collector-buffer', name)
}

/**
 * The default dead-letter directory of the collector `name` (batches given
 * up, see lib/master/dead-letters.js): beside its disk buffer when that is
 * on (`<bufferDir>/dead-letter`), else <state home>/collector-dead-letter/<name>.
 */
function defaultDeadLetterDir (name, bufferDir = null, options) {
  return bufferDir ? path.join(bufferDir, 'dead-letter') : path.join(stateHome(options), 'collector-dead-letter', name)
}

module.exports = { stateHome, defaultBufferDir, defaultDeadLetterDir }
