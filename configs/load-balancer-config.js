'use strict'

const ArgvConfig = require('./argv-config')
const { LOAD_BALANCER_FLAGS } = require('./load-balancer-flags')

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
    if (config.protocol === 'tcp_client' && config.port === 0) {
      problems.push({ flag: 'port', message: 'tcp_client needs the remote port to connect to, got 0' })
    }
    return problems
  }

  /** Adds `worker`, the LoadBalancer's name for `workername`. */
  finalize (config) {
    if ('workername' in config) config.worker = config.workername
    return config
  }
}

module.exports = LoadBalancerConfig
