// Oracle for test/integration/rtcp-oracle.test.js: decodes RTCP compound
// packets with github.com/pion/rtcp. Reads one base64 datagram per line on
// stdin and writes one JSON line per datagram:
// {"ok":true,"packets":[...]} or {"ok":false,"error":"..."}.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"

	"github.com/pion/rtcp"
)

// The JSON shapes are plain maps so that zero values are kept; byte
// strings (SDES text, BYE reason, APP name) are hex, exactly as received.
type obj = map[string]any

func blocks(in []rtcp.ReceptionReport) []obj {
	out := make([]obj, 0, len(in))
	for _, r := range in {
		out = append(out, obj{"ssrc": r.SSRC, "fractionLost": r.FractionLost, "totalLost": r.TotalLost,
			"highestSeq": r.LastSequenceNumber, "jitter": r.Jitter, "lsr": r.LastSenderReport, "dlsr": r.Delay})
	}
	return out
}

func describe(p rtcp.Packet) obj {
	switch v := p.(type) {
	case *rtcp.SenderReport:
		return obj{"type": "SR", "ssrc": v.SSRC, "ntpSec": uint32(v.NTPTime >> 32), "ntpFrac": uint32(v.NTPTime),
			"rtpTimestamp": v.RTPTime, "packetCount": v.PacketCount, "octetCount": v.OctetCount,
			"reports": blocks(v.Reports), "extension": hex.EncodeToString(v.ProfileExtensions)}
	case *rtcp.ReceiverReport:
		return obj{"type": "RR", "ssrc": v.SSRC, "reports": blocks(v.Reports), "extension": hex.EncodeToString(v.ProfileExtensions)}
	case *rtcp.SourceDescription:
		chunks := []obj{}
		for _, c := range v.Chunks {
			items := []obj{}
			for _, it := range c.Items {
				items = append(items, obj{"type": uint8(it.Type), "text": hex.EncodeToString([]byte(it.Text))})
			}
			chunks = append(chunks, obj{"ssrc": c.Source, "items": items})
		}
		return obj{"type": "SDES", "chunks": chunks}
	case *rtcp.Goodbye:
		return obj{"type": "BYE", "sources": append([]uint32{}, v.Sources...), "reason": hex.EncodeToString([]byte(v.Reason))}
	case *rtcp.ApplicationDefined:
		return obj{"type": "APP", "ssrc": v.SSRC, "name": hex.EncodeToString([]byte(v.Name)), "subtype": v.SubType, "data": hex.EncodeToString(v.Data)}
	case *rtcp.ExtendedReport:
		types := []int{}
		for _, r := range v.Reports {
			// every pion block type embeds XRHeader, filled in when decoded
			types = append(types, int(reflect.ValueOf(r).Elem().FieldByName("BlockType").Uint()))
		}
		return obj{"type": "XR", "ssrc": v.SenderSSRC, "blockTypes": types}
	default:
		return obj{"type": "OTHER"}
	}
}

type result struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Packets []obj  `json:"packets,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		data, err := base64.StdEncoding.DecodeString(in.Text())
		if err != nil {
			_ = enc.Encode(result{Error: "bad base64: " + err.Error()})
			continue
		}
		packets, err := rtcp.Unmarshal(data)
		if err != nil {
			_ = enc.Encode(result{Error: err.Error()})
			continue
		}
		res := result{OK: true, Packets: []obj{}}
		for _, p := range packets {
			res.Packets = append(res.Packets, describe(p))
		}
		_ = enc.Encode(res)
	}
}
