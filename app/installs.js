'use strict'

// Which PM2 apps are collectors, and from which install of this package.
// An upgrade into a new directory (a release directory, nvm moving global
// modules) leaves PM2 with apps whose script is another install's entry:
// they are still collectors, and this CLI lists and manages them.

const fs = require('node:fs')
const path = require('node:path')

/*
 * What every version of the launcher gives a collector's PM2 app: a script
 * named collector-entry.js (lib/, lib/ops/, app/ over time) and
 * COLLECTOR_STATS_DIR in its environment. An app started from an ecosystem
 * file (examples/ecosystem.config.js) has the script only, in an install of
 * this package: a collector too (`collector ls` said none, and restart,
 * stop and logs did not know it). The database app (database-entry.js)
 * and a user's own apps have neither.
 */
const ENTRY_FILE = 'collector-entry.js'
const MARK_ENV = 'COLLECTOR_STATS_DIR'

/** Whether PM2's description `p` of an app is a collector's, from any install. */
function isCollectorApp (p) {
  const env = p && p.pm2_env
  if (!env || typeof env.pm_exec_path !== 'string' || path.basename(env.pm_exec_path) !== ENTRY_FILE) return false
  return Boolean((env.env && env.env[MARK_ENV]) || env[MARK_ENV]) || isPackageDir(installOf(env.pm_exec_path))
}

function isPackageDir (dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name === 'collector-cluster'
  } catch {
    return false
  }
}

/**
 * The install an entry file belongs to: the nearest directory above it with
 * this package's package.json, else the entry's directory.
 * @param {string} entry
 * @returns {string}
 */
function installOf (entry) {
  let dir = path.dirname(entry)
  for (let up = 0; up < 4; up++, dir = path.dirname(dir)) if (isPackageDir(dir)) return dir
  return path.dirname(entry)
}

// What PM2 adds to an app's stored environment itself (it sets them again).
function ownEnv (env, name) {
  const kept = {}
  for (const [key, value] of Object.entries(env || {})) {
    if (key === name || key === 'unique_id' || key === 'PM2_JSON_PROCESSING' || key === 'PM2_INTERACTOR_PROCESSING') continue
    kept[key] = value
  }
  return kept
}

/**
 * The PM2 app that runs collector `p` (PM2's description) from `entry`: the
 * same name, flags, working directory, environment (secrets included) and
 * kill timeout, this install's entry.
 */
function movedApp (p, entry, defaults) {
  const env = p.pm2_env
  return {
    ...defaults,
    kill_timeout: env.kill_timeout,
    name: p.name,
    script: entry,
    args: [].concat(env.args || []),
    cwd: env.pm_cwd,
    env: ownEnv(env.env, p.name)
  }
}

module.exports = { ENTRY_FILE, isCollectorApp, installOf, movedApp }
