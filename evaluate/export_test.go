package evaluate

// HalfOfTwoK lends the earlier support-set rule to the external tests (sets_test.go).
var HalfOfTwoK = halfOfTwoK
