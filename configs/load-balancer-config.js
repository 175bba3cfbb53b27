'use strict'

const ArgvConfig = require('./argv-config')
const { LOAD_BALANCER_FLAGS } = require('./load-balancer-flags')
const { toKebab } = require('./flag-definitions')
const { tlsProblems } = require('../lib/protocols/tls-options')
const { ALLOW_PROTOCOLS } = require('../lib/master/options')

/**
 * Parses argv (and env) into the options object a LoadBalancer takes.
 * A collector's config extends it: `static flags = LoadBalancerConfig.extendFlags({ ... })`,
 * and may override `validate(config, given)` for cross-flag checks.
 */
class LoadBalancerConfig extends ArgvConfig {
  static flags = LOAD_BALANCER_FLAGS

  static usage = 'collector [options]'

  /** The base checks: framing only applies to TCP, a tcp_client needs a port. */
  validate (config, given) {
    const problems = super.validate(config, given)
    if (config.protocol === 'udp' && given.has('framing')) {
      problems.push({ flag: 'framing', message: 'applies to tcp protocols only, but --protocol is udp' })
    }
    if (given.has('allow') && !ALLOW_PROTOCOLS.includes(config.protocol)) {
      problems.push({ flag: 'allow', message: `applies to ${ALLOW_PROTOCOLS.join(' and ')} (senders that reach us), not to --protocol ${config.protocol}` })
    }
    if (config.protocol === 'tcp_client' && config.port === 0) {
      problems.push({ flag: 'port', message: 'tcp_client needs the remote port to connect to, got 0' })
    }
    // Both TCP listeners on one port: the second to bind would fail, named
    // as the listener (or the endpoint) that could not listen, not as the mix-up.
    if (config.protocol === 'tcp_server' && config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
      problems.push({ flag: 'metrics-port', message: `the collector's own TCP port (--port ${config.port}, tcp_server): give the metrics endpoint another` })
    }
    const bufferFlags = ['bufferDir', 'bufferMaxBytes', 'bufferSync'].filter((name) => given.has(name))
    if (given.has('buffer') && config.buffer === false && bufferFlags.length > 0) {
      problems.push({ flag: 'no-buffer', message: `turns the disk buffer off, yet ${bufferFlags.map((name) => `--${toKebab(name)}`).join(', ')} configure${bufferFlags.length === 1 ? 's' : ''} it` })
    }
    problems.push(...webConfigProblems(config, given))
    // The LoadBalancer's own TLS checks (files read and parsed), as flags.
    for (const { option, message } of tlsProblems(config, (name) => `--${toKebab(name)}`)) {
      problems.push({ flag: toKebab(option), option, message })
    }
    return problems
  }

  /** Adds `worker`, the LoadBalancer's name for `workername`. */
  finalize (config) {
    if ('workername' in config) config.worker = config.workername
    return config
  }
}

// The metrics endpoint's web config is read and checked here, so that a bad
// one is exit 2 before anything starts (the LoadBalancer checks it again).
function webConfigProblems (config, given) {
  if (!given.has('metricsWebConfig')) return []
  const flag = 'metrics-web-config'
  if (config.metricsPort === undefined) return [{ flag, option: 'metricsWebConfig', message: 'needs --metrics-port: the metrics endpoint is off without it' }]
  try {
    require('../lib/master/web-config').loadWebConfig(config.metricsWebConfig) // js-yaml only when asked for
    return []
  } catch (err) {
    if (err.code !== 'ERR_WEB_CONFIG') throw err
    return [{ flag, option: 'metricsWebConfig', message: `${err.file}: ${err.detail}` }]
  }
}

module.exports = LoadBalancerConfig
