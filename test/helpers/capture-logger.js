'use strict'
// A pino-shaped logger that records every line, for tests that assert on
// what a collector (and its workers, forwarded) logged.

/** @returns {{ logger: object, records: Array<{ level: string, fields: object, msg: string }> }} */
function captureLogger () {
  const records = []
  const logger = { level: 'info', child: () => logger }
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    logger[level] = (fields, msg) => records.push({ level, fields: typeof fields === 'object' ? fields : {}, msg: typeof fields === 'string' ? fields : msg })
  }
  return { logger, records }
}

module.exports = { captureLogger }
