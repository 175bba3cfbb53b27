'use strict'

const { OPTIONS, nameProblem, envNameOf } = require('../lib/master/options')
const { deepFreeze } = require('./flag-definitions')
const { allowListProblem } = require('../lib/shared/allow-list')

/**
 * A declared option or setting as a flag: everything but the flag's name,
 * range and environment variable is the declaration's own
 * (lib/master/options.js, lib/shared/settings.js).
 */
function flagOf (decl) {
  const { flag, range, env, ...rest } = decl
  return { ...rest, ...(range ? { min: range[0], max: range[1] } : {}), ...(env ? { env } : {}) }
}

/**
 * The flags of a collector's settings (lib/collector/database-settings.js): its
 * LoadBalancer defaults as changes to those flags (a collector names its own
 * worker, so --workername is not required), and a flag per setting of the
 * master and the workers that has one, each also read from its
 * COLLECTOR_<FLAG> environment variable. For `Config.extendFlags(...)`.
 * @param {{ defaults?: object, master?: object, worker?: object }} settings
 * @returns {Object<string, object>}
 */
function settingsFlags ({ defaults = {}, fixed = [], master = {}, worker = {} }) {
  const flags = {}
  for (const [option, value] of Object.entries(defaults)) {
    const decl = OPTIONS[option]
    if (!decl || !decl.flag) throw new TypeError(`collector default ${option}: not a LoadBalancer option with a flag`)
    flags[decl.flag] = option === 'worker' ? { default: value, required: false } : { default: value }
    // A value the collector's format needs (NetFlow datagrams read whole):
    // another is refused at start, not a stream of drops (QA).
    if (fixed.includes(option)) flags[decl.flag].validate = (given) => given === value ? undefined : `the ${defaults.name} collector reads its input with ${decl.flag} ${value} only`
  }
  // Each from COLLECTOR_<FLAG> too, as every LoadBalancer option is, or from the variable its declaration names (env).
  for (const [name, decl] of Object.entries({ ...worker, ...master })) if (decl.flag !== false) flags[name] = { ...flagOf(decl), env: decl.env || envNameOf(name) }
  return flags
}

const optionFlags = Object.fromEntries(
  Object.values(OPTIONS).filter((decl) => decl.flag).map((decl) => [decl.flag, flagOf(decl)])
)
optionFlags.workername.required = true
optionFlags.name.validate = nameProblem
optionFlags.allow.validate = (list) => {
  const problem = list.length === 0 ? { reason: 'lists no address or prefix' } : allowListProblem(list)
  // the message shows the value given: name the entry only when there are several
  return problem && (list.length > 1 ? problem.message : problem.reason)
}

/**
 * The flags of `LoadBalancerConfig`: one per LoadBalancer option that can be
 * given on a command line, plus the log level and format, and help.
 */
const LOAD_BALANCER_FLAGS = deepFreeze({
  ...optionFlags,
  logLevel: {
    type: 'string', choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info', group: 'General',
    env: 'COLLECTOR_LOG_LEVEL', description: 'minimum level logged'
  },
  logFormat: {
    type: 'string', choices: ['auto', 'pretty', 'json'], default: 'auto', group: 'General',
    env: 'COLLECTOR_LOG_FORMAT', description: 'log lines: json, pretty (for people), or auto = pretty on a terminal, else json'
  },
  help: { alias: 'h', type: 'boolean', default: false, group: 'General', description: 'show this help' }
})

module.exports = { LOAD_BALANCER_FLAGS, flagOf, settingsFlags }
