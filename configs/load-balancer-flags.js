'use strict'

const { OPTIONS, NAME_PATTERN } = require('../lib/master/options')
const { deepFreeze } = require('./flag-definitions')
const { allowListProblem } = require('../lib/shared/allow-list')

// A LoadBalancer option as a flag: everything but the flag's name, range
// and environment variable is the declaration's own (lib/master/options.js).
function flagOf (decl) {
  const { flag, range, env, ...rest } = decl // eslint-disable-line no-unused-vars
  return { ...rest, ...(range ? { min: range[0], max: range[1] } : {}), env }
}

const optionFlags = Object.fromEntries(
  Object.values(OPTIONS).filter((decl) => decl.flag).map((decl) => [decl.flag, flagOf(decl)])
)
optionFlags.workername.required = true
optionFlags.name.validate = (name) => NAME_PATTERN.test(name) ? undefined : 'use letters, digits, ".", "_" and "-" only, starting with a letter or digit'
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

module.exports = { LOAD_BALANCER_FLAGS }
