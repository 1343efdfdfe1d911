// Named functions for dash-ag-grid (`{"function": "name"}` in Python), so a grid never
// evaluates code built from a string. Dash loads this file from assets/ on every page.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

// Rows arrive sorted by the API; a header click asks for the next page in the URL
// (components/grid.py) instead of reordering this one by its formatted text. AG Grid
// breaks ties by the current position, so a comparator that finds every pair equal
// keeps the server's order.
dagfuncs.keepServerOrder = function () {
  return 0;
};
