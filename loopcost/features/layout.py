"""The feature layout: named fields, explicit limits, a version number.

A computation vector is the concatenation of
- ``MAX_DEPTH`` level blocks (its loops after scheduling, outermost first), each
  ``LEVEL_FIELDS`` followed by the level's row of the schedule matrix: how the
  level's value depends on the computation's original iterators
  (``MAX_ITERS`` coefficients; a tile loop ``floor(i/32)`` has 1/32 on ``i``);
- ``MAX_ACCESSES`` access blocks (the write first, then the reads), each
  ``ACCESS_FIELDS`` followed by the access matrix (``MAX_RANK`` rows of
  ``MAX_ITERS`` coefficients and a constant) over the original iterators; the
  ``inner_stride`` fields depend on the schedule: the innermost loop's step, as
  a direction in the original iterators, applied to the access and its
  buffer's row-major layout;
- ``COMP_FIELDS``: operation counts, reduction, dtype, sizes;
- ``NEST_FIELDS`` (layouts 5 to 7, see ``features.nest``): the generated nest around the computation (guards,
  parallel entries, loops shared), the dependences its loops carry and the bytes its inner loops touch;
- ``DOMAIN_FIELDS`` (layout 8, see ``features.domain``): how far its domain is from a box (triangular nests).

A loop vector is one level block of the first computation inside the loop.

A pack (``K(B,L)``, see ``features.packs``) adds a computation of its own, the copy, and changes the reads
of ``B`` inside ``L``: they read a temporary of the box's size.

Bump ``VERSION`` whenever any of this changes: saved models and exports record it. ``READS`` lists the
versions whose vectors are this one's on every schedule they could hold: models and exports of those load.
"""

from __future__ import annotations

from ..errors import LoopcostError
from ..ir.dtypes import INT_DTYPES

#: 2: a level is read on its own (shared levels computed once); a tile of a tile has 1/(s1*s2) coefficients
#: 3: each access's stride along the innermost loop after scheduling
#: 4: packs (the copy a computation of its own, the packed reads read a temporary)
#: 5: the nest block at the end of a computation vector
#: 6: the nest block counts the levels where a computation sits guarded in another's loop at a constant value
#: (``nest.hidden_levels``: a reduction's initialization in the tile loops of its reduction level)
#: 7: the nest block ends with each level's real trip (``nest.level_trips``: a tile loop inside its point loop runs
#: once, a point loop outside its tile loop its whole range) and the fields of the loops the generated code keeps
#: 8: the domain block at the end: how far the domain is from a box, and which levels read iterators whose bounds
#: move with another's or bound another's (``features.domain``: triangular nests)
VERSION = 8
#: layout 3 held no pack: on every schedule without one, its vectors are layout 4's; layout 4's are layout 6's
#: less the nest block at their end (a network of layout 3 or 4 reads the first ``comp_size`` fields of each);
#: layout 5's nest block differs from layout 6's where a computation sits in another's loop: not read; layout 6's
#: vectors are layout 7's less the fields of the kept loops at their end; layout 7's are layout 8's less the
#: domain block at their end
READS = (3, 4, 6, 7, 8)

MAX_DEPTH = 12
MAX_ITERS = 7
MAX_RANK = 4
MAX_ACCESSES = 16

LEVEL_FIELDS = (
    "present", "log2_extent", "parallel", "vector", "log2_vector_width", "unroll", "log2_unroll_factor",
    "tile_loop", "log2_tile_size", "tiled", "log2_tiled_size", "interchanged", "skewed", "skew_factor",
    "reversed",
)
ACCESS_FIELDS = ("present", "is_write", "same_buffer_as_write", "rank", "buffer_is_input",
                 "buffer_is_output", "buffer_is_temp", "log2_buffer_size",
                 # how far (in elements) the access moves when the innermost loop steps, after scheduling
                 "inner_stride_known", "inner_stride_zero", "inner_stride_one", "log2_inner_stride")
COMP_FIELDS = (
    "n_add", "n_sub", "n_mul", "n_div", "n_minmax", "n_math", "n_reads", "n_consts", "reduction",
    "reduction_add", "reduction_mul", "float32", "float64", "int32", "n_levels", "n_iters",
    "log2_points",
)

NEST_FIELDS = (
    # from the loop tree: levels where the loop runs more iterations than the computation has (guarded), log2 of
    # the iterations it idles, how many levels outside its innermost the innermost guarded one is (0: none), a
    # parallel loop and log2 of how often it is entered, computations in its innermost loop, levels it shares
    "guarded_levels", "log2_idle_iterations", "guard_depth", "parallel", "log2_parallel_entries",
    "inner_sharers", "fused_levels", "log2_inner_trip",
    # from its self-dependences: how many, whether its innermost / outermost level may carry one, how many of
    # its innermost levels carry none
    "self_dependences", "inner_carries", "outer_carries", "free_inner_levels",
    # log2 of the bytes its accesses touch in one run of its innermost k loops, k = 1 .. MAX_DEPTH (past its
    # depth: all of its loops)
    *(f"log2_bytes_inner{k}" for k in range(1, MAX_DEPTH + 1)),
    # (layout 7) the loops the generated code keeps: log2 of the iterations each level runs per entry (0: it runs
    # once, and the code drops it with its tags), how many levels it drops, whether it keeps a parallel loop and
    # log2 of how often that loop is entered, whether it keeps a vector loop, log2 of its innermost kept loop's
    # trip, and the footprints above over the kept loops with their real trips
    *(f"log2_trip_level{d}" for d in range(MAX_DEPTH)),
    "dropped_levels", "kept_parallel", "log2_kept_parallel_entries", "kept_vector", "log2_kept_inner_trip",
    *(f"log2_kept_bytes_inner{k}" for k in range(1, MAX_DEPTH + 1)),
)

#: (layout 8, ``features.domain``) log2 of the share of its bounding box the domain fills, and per level whether
#: its row reads an iterator whose bounds move with another's, then whether it reads one that bounds another's
DOMAIN_FIELDS = (
    "log2_fill", *(f"varying_level{d}" for d in range(MAX_DEPTH)), *(f"bounding_level{d}" for d in range(MAX_DEPTH)),
)

LEVEL_SIZE = len(LEVEL_FIELDS) + MAX_ITERS
ACCESS_SIZE = len(ACCESS_FIELDS) + MAX_RANK * (MAX_ITERS + 1)
#: where the access blocks, the comp fields, the nest block and the domain block start in a computation vector
ACCESSES_AT = MAX_DEPTH * LEVEL_SIZE
FIELDS_AT = ACCESSES_AT + MAX_ACCESSES * ACCESS_SIZE
NEST_AT = FIELDS_AT + len(COMP_FIELDS)
DOMAIN_AT = NEST_AT + len(NEST_FIELDS)
COMP_SIZE = DOMAIN_AT + len(DOMAIN_FIELDS)
#: the width of each layout whose computation vectors are a prefix of this one's (an export of an older layout,
#: ``dataset export --layout``, trains the same recipe without the newer fields: what a layout adds)
PREFIX_WIDTHS = {7: DOMAIN_AT, VERSION: COMP_SIZE}
LOOP_SIZE = LEVEL_SIZE
#: element types without a field of their own, read as one that has (every integer type as int32)
FEATURE_DTYPE = {d: "int32" for d in INT_DTYPES if d != "int32"}
#: each field's position in its block
LEVEL_INDEX = {f: k for k, f in enumerate(LEVEL_FIELDS)}
ACCESS_INDEX = {f: k for k, f in enumerate(ACCESS_FIELDS)}
COMP_INDEX = {f: k for k, f in enumerate(COMP_FIELDS)}
NEST_INDEX = {f: k for k, f in enumerate(NEST_FIELDS)}
DOMAIN_INDEX = {f: k for k, f in enumerate(DOMAIN_FIELDS)}


class FeatureLimitError(LoopcostError):
    """A program exceeds a limit of the feature layout."""


def comp_field_names() -> list[str]:
    """The name of every entry of a computation vector, in order."""
    names = []
    for d in range(MAX_DEPTH):
        names += [f"level{d}.{f}" for f in LEVEL_FIELDS] + [f"level{d}.coef_iter{k}" for k in range(MAX_ITERS)]
    for a in range(MAX_ACCESSES):
        names += [f"access{a}.{f}" for f in ACCESS_FIELDS]
        names += [f"access{a}.m{r}_{c}" for r in range(MAX_RANK) for c in range(MAX_ITERS + 1)]
    return names + list(COMP_FIELDS) + [f"nest.{f}" for f in NEST_FIELDS] + [f"domain.{f}" for f in DOMAIN_FIELDS]
