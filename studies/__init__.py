"""Study code: reproductions of the seed papers' claims, the SEEP thesis' queue model and its tests' timelines.

Each study writes a page under docs/ (one command per page, `make reproduce`). Product code never imports this
package; it may import everything below the DAGs.
"""
