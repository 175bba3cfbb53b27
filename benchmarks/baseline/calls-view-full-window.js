'use strict'

// The calls view's overview as it was before pages were bounded (issue 36,
// item 5), for benchmarks/calls-view.js to compare against in the same run:
// every page load ranked every call of the window (worstCalls) and read
// every call's minute buckets for the chart (callsByMinute), the two full
// reads `collector calls` itself still makes once per run. The rows go
// through the same table; the rest of the page is left out (drawing 10 rows
// and a 60-bar chart is not where the time went).

const { CallsViewServer } = require('../../app/commands/calls-view')
const { worstCalls, callsByMinute } = require('../../app/commands/calls-read')

class FullWindowViewServer extends CallsViewServer {
  async overview () {
    const since = Date.now() - this.since
    const report = await worstCalls(this.streams, { since, worst: this.worst })
    const minutes = await callsByMinute(this.streams, { since })
    const rows = report.shown.map(({ doc, analytics }) => this.table.row(doc, analytics))
    return `<!doctype html><p>${report.total} calls</p><pre>${JSON.stringify({ rows, minutes })}</pre>\n`
  }
}

module.exports = { FullWindowViewServer }
