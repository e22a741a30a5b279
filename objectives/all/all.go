// Package all registers convrep's built-in objectives: import it for its side effect wherever experiment
// files are read (package experiment does).
package all

import (
	_ "convrep/objectives/dialoguecse"
	_ "convrep/objectives/dse"
	_ "convrep/objectives/futuretod"
	_ "convrep/objectives/mgt"
	_ "convrep/objectives/mlm"
	_ "convrep/objectives/rcl"
	_ "convrep/objectives/simcse"
)
