'use strict'

// A real mongod this machine already has, found without a download, in the
// order an operator expects: the one MONGOMS_SYSTEM_BINARY names, one on
// PATH, one in mongodb-memory-server's cache (where that package, ours
// included, keeps what it fetched: MONGOMS_DOWNLOAD_DIR, else
// ~/.cache/mongodb-binaries). Each candidate must answer `--version`: a
// cached build for another distribution does not start for lack of its
// libraries, and is passed over with the reason rather than tried.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { DatabaseError } = require('../../exceptions')
const { findExecutable, isExecutableFile } = require('./find-executable')
const { isAlive } = require('../shared/is-alive')

const VERSION_TIMEOUT_MS = 10000
// mongodb-memory-server names what it extracts `mongod-<arch>-<dist>-<version>`,
// <arch> as Node says it (x64) or, from an archive name, as MongoDB does (x86_64).
const CACHED_NAME = /^mongod-([a-z0-9_]+)-(.+)-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(\.exe)?$/
const ARCH_NAMES = { x64: ['x64', 'x86_64'], arm64: ['arm64', 'aarch64'] }

/**
 * Where mongodb-memory-server downloads to and looks first:
 * MONGOMS_DOWNLOAD_DIR, else ~/.cache/mongodb-binaries.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string}
 */
function mongodDownloadDir (env) {
  if (env.MONGOMS_DOWNLOAD_DIR) return path.resolve(env.MONGOMS_DOWNLOAD_DIR)
  return path.join(env.HOME || os.homedir(), '.cache', 'mongodb-binaries')
}

/**
 * The directories mongodb-memory-server keeps binaries in, as it searches
 * them: MONGOMS_DOWNLOAD_DIR, ~/.cache/mongodb-binaries, then the project's
 * node_modules/.cache/mongodb-memory-server (older versions' default).
 * @param {NodeJS.ProcessEnv} env
 * @returns {string[]}
 */
function mongodCacheDirs (env) {
  const home = path.join(env.HOME || os.homedir(), '.cache', 'mongodb-binaries')
  const modules = path.resolve('node_modules', '.cache', 'mongodb-memory-server')
  return [...new Set([mongodDownloadDir(env), home, modules])]
}

/**
 * A mongod already on this machine: `{ binary, version, source }` (source
 * says where it was found, for the log), or `{ binary: null, looked }`
 * (where it was looked for, and any candidate passed over and why).
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ binary: string, version: string|null, source: string } | { binary: null, looked: string }}
 * @throws {DatabaseError} when MONGOMS_SYSTEM_BINARY names no mongod that runs: an explicit choice is not passed over
 */
function findMongod (env) {
  if (env.MONGOMS_SYSTEM_BINARY) {
    const binary = path.resolve(env.MONGOMS_SYSTEM_BINARY)
    const probe = probeVersion(binary, env)
    if (probe.error) throw new DatabaseError(`MONGOMS_SYSTEM_BINARY=${env.MONGOMS_SYSTEM_BINARY} is not a mongod that runs: ${probe.error}`)
    return { binary, version: probe.version, source: `MONGOMS_SYSTEM_BINARY: ${binary}` }
  }
  const passedOver = []
  const onPath = findExecutable('mongod', env)
  if (onPath) {
    const probe = probeVersion(onPath, env)
    if (!probe.error) return { binary: onPath, version: probe.version, source: `on PATH: ${onPath}` }
    passedOver.push(`${onPath} does not run: ${probe.error}`)
  }
  const dirs = mongodCacheDirs(env)
  for (const candidate of cachedMongods(dirs, env.MONGOMS_VERSION)) {
    const probe = probeVersion(candidate.binary, env)
    if (!probe.error) return { binary: candidate.binary, version: probe.version || candidate.version, source: `cached: ${candidate.binary}` }
    passedOver.push(`${candidate.binary} does not run: ${probe.error}`)
  }
  const looked = `${onPath ? 'none that runs' : 'none'} on PATH, none in ${[dirs[0], ...dirs.slice(1).filter(isDirectory)].join(' or ')}`
  return { binary: null, looked: [looked, ...passedOver].join('; ') }
}

/**
 * The mongod binaries in mongodb-memory-server's cache directories for
 * this machine's architecture, newest version first; only `version` when
 * given (MONGOMS_VERSION). One still being extracted (its lock held by a
 * live process) is left alone.
 * @param {string[]} dirs
 * @param {string} [version]
 * @returns {{ binary: string, version: string }[]}
 */
function cachedMongods (dirs, version) {
  const arches = ARCH_NAMES[process.arch] || [process.arch]
  const found = []
  for (const dir of dirs) {
    let names
    try {
      names = fs.readdirSync(dir)
    } catch {
      continue
    }
    for (const name of names) {
      const match = CACHED_NAME.exec(name)
      if (!match || !arches.includes(match[1]) || (version && match[3] !== version)) continue
      const binary = path.join(dir, name)
      if (isExecutableFile(binary) && !isLockedByLiveProcess(path.join(dir, `${match[3]}.lock`))) found.push({ binary, version: match[3] })
    }
  }
  return found.sort((a, b) => compareVersions(b.version, a.version))
}

/** `mongod --version` → `{ version }` ('8.2.6', or null if unsaid) or `{ error }`. */
function probeVersion (binary, env) {
  const result = spawnSync(binary, ['--version'], { env, encoding: 'utf8', timeout: VERSION_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] })
  if (result.error) return { error: result.error.code === 'ETIMEDOUT' ? `no answer to --version in ${VERSION_TIMEOUT_MS / 1000} s` : result.error.message }
  if (result.status !== 0) {
    const said = `${result.stderr || ''}\n${result.stdout || ''}`.trim().split('\n')[0]
    return { error: `--version ${result.signal || `exit code ${result.status}`}${said ? `: ${said}` : ''}` }
  }
  const match = /db version v?(\d+\.\d+\.\d+\S*)/.exec(result.stdout)
  return { version: match ? match[1] : null }
}

function compareVersions (a, b) {
  const left = a.split(/[.-]/).map(Number)
  const right = b.split(/[.-]/).map(Number)
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] || 0) - (right[i] || 0)
    if (diff) return Number.isNaN(diff) ? 0 : diff
  }
  return 0
}

function isLockedByLiveProcess (lock) {
  try {
    const pid = parseInt(fs.readFileSync(lock, 'utf8'), 10)
    return pid > 0 && isAlive(pid)
  } catch {
    return false
  }
}

function isDirectory (dir) {
  return fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true
}

module.exports = { findMongod, mongodDownloadDir, mongodCacheDirs, probeVersion }
