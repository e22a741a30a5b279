package datasets

// A flattened dialogue longer than the model's input is cut into windows that tile it, so that every one of
// its tokens reaches the model, not only its opening (or its end). Each window is [CLS] + room consecutive
// body tokens + [SEP]; the body is the dialogue's turns as Span joins them (role token, then the text).

// BodyLen is the number of tokens of dialogue i's turns, without [CLS] and [SEP].
func (d *DialogueTokens) BodyLen(i int) int {
	n := 0
	for _, t := range d.Turns[i] {
		n += len(t)
	}
	return n
}

// WindowCount is how many windows of room tokens tile a body of n tokens: ceil(n/room), and 1 for a body
// that fits (or is empty) or when room <= 0 (no limit).
func WindowCount(n, room int) int {
	if room <= 0 || n <= room {
		return 1
	}
	return (n + room - 1) / room
}

// WindowStart is where window j of the WindowCount(n, room) windows of a body of n tokens starts when the
// tiling is moved left by shift tokens, 0 <= shift <= WindowCount(n, room)·room − n (the slack; outside it
// is clamped into it). Window j starts at j·room − shift, clamped to [0, n−room]: the first window starts
// at 0, the last ends at n, and no two consecutive windows leave a gap, so the windows cover the body
// whatever the shift; the shift only moves their borders.
func WindowStart(n, room, j, shift int) int {
	k := WindowCount(n, room)
	if k == 1 {
		return 0
	}
	shift = min(max(shift, 0), k*room-n)
	return min(max(j*room-shift, 0), n-room)
}

// Window is [CLS] + the body tokens of dialogue i from start to start+room (to the end when room <= 0) +
// [SEP]. start and the end are clamped into the body.
func (d *DialogueTokens) Window(i, start, room int) []int64 {
	n := d.BodyLen(i)
	start = min(max(start, 0), n)
	end := n
	if room > 0 {
		end = min(n, start+room)
	}
	out := make([]int64, 0, end-start+2)
	out = append(out, d.CLS)
	pos := 0
	for _, t := range d.Turns[i] {
		if pos >= end {
			break
		}
		for _, id := range t {
			if pos >= start && pos < end {
				out = append(out, int64(id))
			}
			pos++
		}
	}
	return append(out, d.SEP)
}
