// Oracle for test/integration/syslog-oracle.test.js: reads newline-delimited
// base64 syslog messages on stdin and prints one JSON line per message, as
// influxdata/go-syslog's strict RFC 5424 machine (best effort off) reads it.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"

	"github.com/influxdata/go-syslog/v3"
	"github.com/influxdata/go-syslog/v3/rfc5424"
)

type result struct {
	Valid    bool                          `json:"valid"`
	Error    string                        `json:"error,omitempty"`
	Priority *uint8                        `json:"priority,omitempty"`
	Version  uint16                        `json:"version,omitempty"`
	Seconds  *int64                        `json:"seconds,omitempty"`
	Nanos    int                           `json:"nanos,omitempty"`
	Hostname *string                       `json:"hostname"`
	Appname  *string                       `json:"appname"`
	ProcID   *string                       `json:"procid"`
	MsgID    *string                       `json:"msgid"`
	SD       *map[string]map[string]string `json:"sd"`
	Message  *string                       `json:"message"`
}

func main() {
	parser := rfc5424.NewParser()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		data, err := base64.StdEncoding.DecodeString(in.Text())
		if err != nil {
			enc.Encode(result{Error: "bad base64: " + err.Error()})
			continue
		}
		enc.Encode(parse(parser, data))
	}
}

func parse(parser syslog.Machine, data []byte) result {
	msg, err := parser.Parse(data)
	if err != nil {
		return result{Error: err.Error()}
	}
	m, ok := msg.(*rfc5424.SyslogMessage)
	if !ok || !m.Valid() {
		return result{Error: "not a valid message"}
	}
	r := result{Valid: true, Priority: m.Priority, Version: m.Version, Hostname: m.Hostname,
		Appname: m.Appname, ProcID: m.ProcID, MsgID: m.MsgID, SD: m.StructuredData}
	if m.Timestamp != nil {
		s := m.Timestamp.Unix()
		r.Seconds = &s
		r.Nanos = m.Timestamp.Nanosecond()
	}
	if m.Message != nil {
		// go-syslog keeps the BOM in MSG; the record under test drops it (§6.4).
		text := strings.TrimPrefix(*m.Message, "\uFEFF")
		r.Message = &text
	}
	return r
}
