package tsne

// quadTree is the Barnes-Hut space-partitioning tree over the 2-D map, rebuilt every iteration. Nodes live
// in one slice (children of a node are four consecutive entries) so that building allocates little and
// walking stays in cache.
type quadTree struct {
	nodes   []quadNode
	centres []float64 // the cells' centres (x at 2c, y at 2c+1), needed only while building
	y       []float64 // the map, x and y of point i at 2i and 2i+1
}

// quadNode holds what the walk in repulsion reads, kept small (40 bytes) because that walk is the
// bottleneck of every iteration.
type quadNode struct {
	mx, my float64 // sum of the points' coordinates while building, their mean after
	half   float64 // half the cell's side
	count  int32   // points in the cell
	child  int32   // index of the first of four children; -1 for a leaf
	point  int32   // a leaf's point (all of a leaf's points share its coordinates); -1 if empty
}

// maxDepth stops splitting where cells are about 2^-50 of the map: points closer than that share a leaf
// and are treated as being at its first point's place.
const maxDepth = 50

// build rebuilds the tree over y, reusing the node slice.
func (t *quadTree) build(y []float64) {
	t.y = y
	minX, minY, maxX, maxY := y[0], y[1], y[0], y[1]
	for i := 2; i < len(y); i += 2 {
		minX, maxX = min(minX, y[i]), max(maxX, y[i])
		minY, maxY = min(minY, y[i+1]), max(maxY, y[i+1])
	}
	// A margin keeps the largest coordinates strictly inside the root cell.
	half := max(maxX-minX, maxY-minY)/2*(1+1e-9) + 1e-12
	t.nodes = append(t.nodes[:0], quadNode{half: half, child: -1, point: -1})
	t.centres = append(t.centres[:0], (minX+maxX)/2, (minY+maxY)/2)
	for i := 0; i < len(y)/2; i++ {
		t.insert(int32(i))
	}
	for c := range t.nodes {
		nd := &t.nodes[c]
		switch {
		case nd.count == 0:
		case nd.child < 0:
			// Exactly the leaf's place, not a rounded mean of copies of it, so that repulsion can
			// recognise a point's own leaf by a zero distance.
			nd.mx, nd.my = y[2*nd.point], y[2*nd.point+1]
		default:
			nd.mx /= float64(nd.count)
			nd.my /= float64(nd.count)
		}
	}
}

// insert adds point i, splitting the leaf it lands in if that holds a point elsewhere.
func (t *quadTree) insert(i int32) {
	x, y := t.y[2*i], t.y[2*i+1]
	n := int32(0)
	for depth := 0; ; depth++ {
		nd := &t.nodes[n]
		if nd.child < 0 && nd.point >= 0 && depth < maxDepth &&
			(t.y[2*nd.point] != x || t.y[2*nd.point+1] != y) {
			t.split(n)
			nd = &t.nodes[n]
			// The occupant (with any points at its very place) moves down whole.
			q := nd.child + t.quadrant(n, t.y[2*nd.point], t.y[2*nd.point+1])
			c := &t.nodes[q]
			c.mx, c.my, c.count, c.point = nd.mx, nd.my, nd.count, nd.point
			nd.point = -1
		}
		nd.mx += x
		nd.my += y
		nd.count++
		if nd.child < 0 {
			if nd.point < 0 {
				nd.point = i
			}
			return
		}
		n = nd.child + t.quadrant(n, x, y)
	}
}

// split gives leaf n four empty children.
func (t *quadTree) split(n int32) {
	h := t.nodes[n].half / 2
	px, py := t.centres[2*n], t.centres[2*n+1]
	first := int32(len(t.nodes))
	for q := 0; q < 4; q++ {
		cx, cy := px-h, py-h
		if q&1 != 0 {
			cx = px + h
		}
		if q&2 != 0 {
			cy = py + h
		}
		t.nodes = append(t.nodes, quadNode{half: h, child: -1, point: -1})
		t.centres = append(t.centres, cx, cy)
	}
	t.nodes[n].child = first
}

// quadrant numbers the child of cell n holding (x, y): bit 0 east, bit 1 north.
func (t *quadTree) quadrant(n int32, x, y float64) int32 {
	q := int32(0)
	if x >= t.centres[2*n] {
		q |= 1
	}
	if y >= t.centres[2*n+1] {
		q |= 2
	}
	return q
}

// repulsion returns, for point i, the sum over other points j of q_ij²·(y_i − y_j) and of q_ij, with
// q_ij = 1/(1+|y_i − y_j|²) unnormalised; a cell stands for its points at their centre of mass when its
// diagonal is below theta times its distance. stack is scratch space, returned for reuse.
func (t *quadTree) repulsion(i int, theta float64, stack []int32) (fx, fy, sumQ float64, _ []int32) {
	x, y := t.y[2*i], t.y[2*i+1]
	theta2 := theta * theta
	stack = append(stack[:0], 0) // the root is never empty
	for len(stack) > 0 {
		nd := &t.nodes[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		dx, dy := x-nd.mx, y-nd.my
		d2 := dx*dx + dy*dy
		if nd.child >= 0 && 8*nd.half*nd.half >= theta2*d2 { // diagonal² = 8·half²
			for q := nd.child + 3; q >= nd.child; q-- {
				if t.nodes[q].count > 0 {
					stack = append(stack, q)
				}
			}
			continue
		}
		cnt := float64(nd.count)
		if nd.child < 0 && d2 == 0 {
			// A leaf at i's own place: i itself and any duplicates, each with q = 1 and no force.
			sumQ += cnt - 1
			continue
		}
		q := 1 / (1 + d2)
		sumQ += cnt * q
		w := cnt * q * q
		fx += w * dx
		fy += w * dy
	}
	return fx, fy, sumQ, stack
}
