'use strict'

// The sets of a NetFlow v9 or IPFIX message, shared by both: a set is a
// uint16 ID and a uint16 length (header included); template sets teach the
// domain's templates, a set of ID 256 or more holds data records of the
// template of that ID, other IDs are reserved and passed over by length.
// v9 lets up to three bytes of padding end the datagram; IPFIX's message
// length covers its sets exactly.

const { readTemplateSet, V9, IPFIX } = require('./template-set')
const { planOf, readDataSet } = require('./data-records')

/**
 * Reads every set from `start` to `end` into `context.datagram`, staging
 * template changes in `context.staged`.
 * @param {Buffer} buf
 * @param {number} start
 * @param {number} end
 * @param {{ ipfix: boolean, staged: object, datagram: object, exportTime: number, sysUptime?: number, maxRecords: number }} context
 * @returns {{ dataRecords: number, unknownSets: number }|string} counts, or the reason of a refusal
 */
function readSets (buf, start, end, context) {
  const { ipfix, staged, datagram } = context
  const ids = ipfix ? IPFIX : V9
  const reading = { exportTime: context.exportTime, sysUptime: context.sysUptime, systemInit: ipfix ? staged.systemInit() : undefined, templateId: 0, setSystemInit: undefined, uptimes: { first: -1, last: -1, init: -1 }, maxRecords: context.maxRecords }
  // v9 times count from the header's sysUptime: an init time there is not needed.
  reading.setSystemInit = ipfix ? (ms) => { reading.systemInit = ms; staged.setSystemInit(ms) } : () => {}
  const plans = new Map() // template ID → plan or null, until a template set changes them
  let dataRecords = 0
  let at = start
  while (at < end) {
    if (end - at < 4) {
      if (ipfix) return 'netflow-bad-length'
      break
    }
    const id = buf.readUInt16BE(at)
    const length = buf.readUInt16BE(at + 2)
    if (length < 4) return 'netflow-bad-length'
    if (length > end - at) return 'netflow-truncated'
    if (id === ids.TEMPLATES || id === ids.OPTIONS) {
      const actions = readTemplateSet(buf, at + 4, at + length, id)
      if (typeof actions === 'string') return actions
      plans.clear()
      stage(actions, staged, id === ids.OPTIONS)
    } else if (id >= 256) {
      const plan = planFor(id, staged, ipfix, plans)
      if (plan === null) {
        datagram.unknownTemplates++
      } else {
        reading.templateId = id
        const read = readDataSet(buf, at + 4, at + length, plan, reading, datagram)
        if (typeof read === 'string') return read
        dataRecords += read
      }
    }
    at += length
  }
  return { dataRecords, unknownSets: datagram.unknownTemplates }
}

function stage (actions, staged, options) {
  for (const action of actions) {
    if (action.withdrawAll) staged.withdrawAll(options)
    else if (action.withdraw) staged.withdraw(action.id)
    else staged.learn(action.id, action.template)
  }
}

// Exporters send many small data sets (softflowd: one or two records each),
// so a datagram looks each template up once.
function planFor (id, staged, ipfix, plans) {
  let plan = plans.get(id)
  if (plan === undefined) {
    const template = staged.get(id)
    plan = (template === undefined ? undefined : planOf(template, ipfix)) ?? null
    plans.set(id, plan)
  }
  return plan
}

module.exports = { readSets }
