'use strict'
// A config class of your own: the base flags plus yours, with a different
// default port, without changing LoadBalancerConfig itself.
//   node examples/custom-config.js --threshold 5 -i 2
//   node examples/custom-config.js --help
const { LoadBalancerConfig, InvalidConfigError } = require('..')

class AlertConfig extends LoadBalancerConfig {
  static usage = 'node examples/custom-config.js [options]'

  static flags = LoadBalancerConfig.extendFlags({
    port: { default: 9998 },
    workername: { required: false, default: require.resolve('./word-count-worker') },
    threshold: { type: 'integer', min: 1, default: 10, description: 'words per second that raise an alert' },
    webhook: { type: 'string', env: 'ALERT_WEBHOOK', description: 'where alerts are posted' }
  })

  validate (config, given) {
    const problems = super.validate(config, given)
    if (config.threshold > 1000 && !config.webhook) problems.push({ flag: 'webhook', message: 'is required when --threshold is over 1000' })
    return problems
  }
}

try {
  const config = new AlertConfig().getConfig()
  if (config.help) console.log(new AlertConfig().help())
  else console.log(config)
} catch (err) {
  if (!(err instanceof InvalidConfigError)) throw err
  console.error(err.message)
  process.exitCode = 2
}
