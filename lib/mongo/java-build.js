'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { setTimeout: sleep } = require('node:timers/promises')
const { DatabaseError } = require('../../exceptions')
const { createNoopLogger } = require('../shared/logger')
const { findExecutable } = require('./find-executable')
const { tailOf } = require('./child-server')
const { isAlive } = require('../shared/is-alive')

const JAVA_DIR = path.resolve(__dirname, '..', '..', 'java')
const TARGET_DIR = path.join(JAVA_DIR, 'target')
const PATHS = Object.freeze({
  pom: path.join(JAVA_DIR, 'pom.xml'),
  jar: path.join(TARGET_DIR, 'mongo-server-launcher.jar'),
  libDir: path.join(TARGET_DIR, 'lib'),
  lock: path.join(TARGET_DIR, '.build.lock')
})
const BUILD_TIMEOUT_MS = 10 * 60 * 1000
const LOCK_POLL_MS = 500

/** How to get what the Java server needs, as the error messages say it. */
const JDK_HINT = 'a JDK 17+ and Maven: apt-get install openjdk-17-jdk-headless maven (Debian, Ubuntu), brew install openjdk@17 maven (macOS)'

/** The command that builds the launcher (also what CI runs). */
const BUILD_COMMAND = ['mvn', '-q', '-B', '-f', PATHS.pom, 'package']

// pom.xml copies the dependencies before writing the jar: a jar newer than
// the pom and every source is a finished, current build (an older one is
// rebuilt: a checkout that changed the launcher must not run the old one).
function artifactsPresent () {
  let built
  try {
    built = fs.statSync(PATHS.jar).mtimeMs
  } catch {
    return false
  }
  return sourceFiles(path.join(JAVA_DIR, 'src')).concat(PATHS.pom).every((file) => fs.statSync(file).mtimeMs <= built)
}

function sourceFiles (dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(file) : [file]
  })
}

/**
 * True when the launcher jar and its dependencies are in java/target and no
 * build is running.
 * @returns {boolean}
 */
function isJavaServerBuilt () {
  return artifactsPresent() && !fs.existsSync(PATHS.lock)
}

/**
 * Builds java/ with Maven unless already built. A lock file makes
 * concurrent callers (parallel test processes) wait for one build.
 * @param {{ logger?: object, env?: NodeJS.ProcessEnv, timeoutMs?: number }} [options]
 * @returns {Promise<{ jar: string, libDir: string }>}
 */
async function ensureJavaServerBuilt ({ logger = createNoopLogger(), env = process.env, timeoutMs = BUILD_TIMEOUT_MS } = {}) {
  const deadline = Date.now() + timeoutMs
  while (!isJavaServerBuilt()) {
    if (tryLock()) {
      try {
        if (!artifactsPresent()) await runMaven({ logger, env, timeoutMs })
      } finally {
        fs.rmSync(PATHS.lock, { force: true })
      }
      break
    }
    if (Date.now() > deadline) throw new DatabaseError(`timed out waiting for another process to build the Java MongoDB server (lock ${PATHS.lock})`)
    removeStaleLock()
    await sleep(LOCK_POLL_MS)
  }
  return { jar: PATHS.jar, libDir: PATHS.libDir }
}

function tryLock () {
  fs.mkdirSync(TARGET_DIR, { recursive: true })
  try {
    fs.writeFileSync(PATHS.lock, String(process.pid), { flag: 'wx' })
    return true
  } catch (err) {
    if (err.code === 'EEXIST') return false
    throw err
  }
}

// A builder killed mid-build leaves its lock behind; its pid tells.
function removeStaleLock () {
  let pid
  try {
    pid = Number(fs.readFileSync(PATHS.lock, 'utf8'))
  } catch {
    return
  }
  if (pid > 0 && !isAlive(pid)) fs.rmSync(PATHS.lock, { force: true })
}

function runMaven ({ logger, env, timeoutMs }) {
  requireExecutable('java', env)
  const mvn = requireExecutable('mvn', env)
  logger.info({ command: BUILD_COMMAND.join(' ') }, 'building the Java MongoDB-compatible server (first run only)')
  return new Promise((resolve, reject) => {
    const child = spawn(mvn, BUILD_COMMAND.slice(1), { cwd: JAVA_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] })
    const stdout = tailOf(child.stdout)
    const stderr = tailOf(child.stderr)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(new DatabaseError(`could not run mvn: ${err.message}`, { cause: err }))
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && artifactsPresent()) return resolve()
      const output = [stdout.text(), stderr.text()].filter(Boolean).join('\n')
      reject(new DatabaseError(`building the Java MongoDB server failed (${BUILD_COMMAND.join(' ')}: ${signal || `exit code ${code}`})\n${output}`))
    })
  })
}

/**
 * What the Java server lacks on this machine to run: null when `java` is
 * on PATH and the launcher is built (or being built), or Maven is there to
 * build it; else the missing tool, as one phrase for the log.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string|null}
 */
function javaServerMissing (env) {
  if (!findExecutable('java', env)) return 'no java on PATH'
  if (artifactsPresent() || fs.existsSync(PATHS.lock) || findExecutable('mvn', env)) return null
  return 'java is on PATH, but not Maven (mvn), which its first start needs to build it'
}

/**
 * @param {string} name
 * @param {NodeJS.ProcessEnv} env
 * @returns {string} absolute path
 */
function requireExecutable (name, env) {
  const found = findExecutable(name, env)
  if (found) return found
  throw new DatabaseError(`"${name}" was not found on PATH; the Java server needs ${JDK_HINT}; or set MONGODB_URI to an existing MongoDB`)
}

module.exports = { ensureJavaServerBuilt, isJavaServerBuilt, javaServerMissing, requireExecutable, BUILD_COMMAND, PATHS, JDK_HINT }
