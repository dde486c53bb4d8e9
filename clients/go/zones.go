package ratelimit

import (
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the zone database where the system has none
)

//go:generate go run ./internal/zonegen

// zoneRange is how far the offsets passed reach on either side of now.
const zoneRange = 400 * 24 * time.Hour

var (
	zoneIndexOnce sync.Once
	zoneIndex     map[string]string // lower-case name -> the database's
	locations     sync.Map          // canonical name -> *time.Location
)

// canonicalZone is the database's spelling of name, matched without
// regard to ASCII case; "UTC" and unknown names are not (the script reads
// UTC and fixed offsets itself, and answers the module's error for others).
func canonicalZone(name string) (string, bool) {
	zoneIndexOnce.Do(func() {
		zoneIndex = make(map[string]string, len(zoneNames))
		for _, n := range zoneNames {
			zoneIndex[strings.ToLower(n)] = n
		}
	})
	if strings.EqualFold(name, "UTC") {
		return "", false
	}
	c, ok := zoneIndex[strings.ToLower(name)]
	return c, ok
}

func location(canonical string) (*time.Location, bool) {
	if l, ok := locations.Load(canonical); ok {
		return l.(*time.Location), true
	}
	l, err := time.LoadLocation(canonical)
	if err != nil {
		return nil, false
	}
	locations.Store(canonical, l)
	return l, true
}

// zoneSegment is `written|canonical|lo|off0(|t|off)*`: the zone's UTC
// offset at lo = now - 400 days (whole seconds) and every change of offset
// up to now + 400 days.
func zoneSegment(written string, now time.Time) (string, bool) {
	canonical, ok := canonicalZone(written)
	if !ok {
		return "", false
	}
	loc, ok := location(canonical)
	if !ok {
		return "", false
	}
	lo := now.Add(-zoneRange).Unix() // floored to a whole second
	hi := now.Add(zoneRange).Unix()
	t := time.Unix(lo, 0).In(loc)
	_, prev := t.Zone()
	var b strings.Builder
	b.WriteString(written)
	b.WriteByte('|')
	b.WriteString(canonical)
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(lo, 10))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(prev))
	for range 10000 {
		_, end := t.ZoneBounds()
		if end.IsZero() || end.Unix() > hi || !end.After(t) {
			break
		}
		t = end.In(loc)
		if _, off := t.Zone(); off != prev {
			b.WriteByte('|')
			b.WriteString(strconv.FormatInt(end.Unix(), 10))
			b.WriteByte('|')
			b.WriteString(strconv.Itoa(off))
			prev = off
		}
	}
	return b.String(), true
}
