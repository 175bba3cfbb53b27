'use strict'

const fs = require('node:fs')
const path = require('node:path')
const CollectorError = require('../exceptions/collector-error')
const { whereFailed } = require('../lib/shared/where-failed')
const LoadBalancer = require('../lib/master/load-balancer')
const LoadBalancerConfig = require('../configs/load-balancer-config')

/**
 * A collector module is a CommonJS module exporting
 * `{ Collector, Config, description? }`:
 * - `Collector`: a class extending LoadBalancer (the master);
 * - `Config`: a class extending LoadBalancerConfig whose parsed config is
 *   passed to `new Collector({ ...config, logger })`; it should give
 *   `workername` a default so that users need not name the worker;
 * - `description`: one line shown by `collector help`.
 * Workers may report `dbWrites` (database writes) from `stats()`: `collector
 * top` shows it and its rate.
 *
 * @typedef {object} CollectorModule
 * @property {typeof LoadBalancer} Collector
 * @property {typeof LoadBalancerConfig} Config
 * @property {string} [description]
 */

/** Built-in collector names → module paths, resolved only when used. */
const BUILT_INS = Object.freeze({
  rtcp: path.join(__dirname, '..', 'collectors', 'rtcp', 'index.js'),
  hep: path.join(__dirname, '..', 'collectors', 'hep', 'index.js'),
  netflow: path.join(__dirname, '..', 'collectors', 'netflow', 'index.js'),
  statsd: path.join(__dirname, '..', 'collectors', 'statsd', 'index.js'),
  syslog: path.join(__dirname, '..', 'collectors', 'syslog', 'index.js')
})

/**
 * Where a collector argument points: a built-in name or a module path.
 * @param {string} target built-in name (`rtcp`, `syslog`) or path of a collector module
 * @param {string} [cwd] base of a relative path
 * @returns {{ target: string, builtIn: boolean, modulePath: string }}
 * @throws {CollectorError} ERR_UNKNOWN_COLLECTOR when nothing is there
 */
function resolveCollector (target, cwd = process.cwd()) {
  if (typeof target !== 'string' || target === '') {
    throw new CollectorError(`a collector is required: one of ${Object.keys(BUILT_INS).join(', ')} or the path of a collector module`, 'ERR_UNKNOWN_COLLECTOR')
  }
  if (Object.hasOwn(BUILT_INS, target)) return resolveBuiltIn(target)
  const candidate = path.resolve(cwd, target)
  const modulePath = tryResolve(candidate)
  if (!modulePath) {
    throw new CollectorError(`unknown collector ${JSON.stringify(target)}: not a built-in (${Object.keys(BUILT_INS).join(', ')}) and no module at ${candidate}`, 'ERR_UNKNOWN_COLLECTOR', { target })
  }
  return { target: modulePath, builtIn: false, modulePath }
}

function resolveBuiltIn (name) {
  const modulePath = BUILT_INS[name]
  if (!fs.existsSync(modulePath)) {
    throw new CollectorError(`the built-in collector ${name} is not available in this installation (missing ${path.relative(process.cwd(), modulePath) || modulePath})`, 'ERR_UNKNOWN_COLLECTOR', { target: name })
  }
  return { target: name, builtIn: true, modulePath }
}

function tryResolve (candidate) {
  try {
    return require.resolve(candidate)
  } catch {
    return null
  }
}

/**
 * Loads and checks a collector module.
 * @param {string} target built-in name or module path
 * @param {string} [cwd]
 * @returns {CollectorModule & { target: string, builtIn: boolean, modulePath: string }}
 * @throws {CollectorError} ERR_UNKNOWN_COLLECTOR or ERR_INVALID_COLLECTOR
 */
// One line: a module not found says which file asked for it, where Node
// adds its whole require stack (this CLI's own files among it).
function loadProblem (err, modulePath) {
  if (err.name === 'SyntaxError') { // where: its file and line (QA: "Unexpected end of input", in no file)
    const where = whereFailed(err, modulePath, __dirname)
    return `${where ? `${where.file}:${where.line}: ` : ''}SyntaxError: ${String(err.message).split('\n')[0]}`
  }
  if (err.code !== 'MODULE_NOT_FOUND' || !Array.isArray(err.requireStack) || err.requireStack.length === 0) return err.message.split('\n')[0]
  return `${err.message.split('\n')[0]} (required by ${err.requireStack[0]}; npm install it there?)`
}

function loadCollector (target, cwd) {
  const where = resolveCollector(target, cwd)
  let exported
  try {
    exported = require(where.modulePath)
  } catch (err) {
    throw new CollectorError(`collector ${target} failed to load: ${loadProblem(err, where.modulePath)}`, 'ERR_INVALID_COLLECTOR', { target, cause: err })
  }
  checkModule(exported, target)
  return { ...where, Collector: exported.Collector, Config: exported.Config, description: exported.description || '' }
}

function checkModule (exported, target) {
  const problems = []
  if (!exported || !isSubclass(exported.Collector, LoadBalancer, COLLECTOR_METHODS)) problems.push('Collector must be a class extending LoadBalancer')
  if (!exported || !isSubclass(exported.Config, LoadBalancerConfig, CONFIG_METHODS)) problems.push('Config must be a class extending LoadBalancerConfig')
  if (problems.length) {
    throw new CollectorError(`collector ${target} is not a collector module: ${problems.join('; ')}`, 'ERR_INVALID_COLLECTOR', { target })
  }
}

const COLLECTOR_METHODS = ['start', 'stop', 'restart', 'stats']
const CONFIG_METHODS = ['getConfig', 'help']

// A user's module may extend its own installed copy of this package, so a
// class with the right methods passes too.
function isSubclass (candidate, base, methods) {
  if (typeof candidate !== 'function' || !candidate.prototype) return false
  if (candidate === base || candidate.prototype instanceof base) return true
  return methods.every((name) => typeof candidate.prototype[name] === 'function')
}

/**
 * Built-in collector names with whether each is installed.
 * @returns {Array<{ name: string, available: boolean }>}
 */
function builtIns () {
  return Object.entries(BUILT_INS).map(([name, file]) => ({ name, available: fs.existsSync(file) }))
}

module.exports = { BUILT_INS, resolveCollector, loadCollector, builtIns }
