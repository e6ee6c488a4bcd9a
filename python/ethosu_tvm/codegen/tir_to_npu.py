"""Scheduled TIR → the NPU operations it asks for: one `Stripe` per instance of a primitive's output block.

The PrimFunc is walked in program order. A loop whose body holds the output blocks of several primitives, or a loop
annotated STRIPE_ANNOTATION (or one holding such a loop), is a stripe loop: it is unrolled here, and each iteration
emits its operators in order. Any other loop belongs to the one operator whose output block it holds, and that
operator's NPU operation covers all of it.

What an operation computes comes from the TIR alone: its OFM box is what the output block writes over its loops
(stripe loops fixed); the boxes it reads are the loads of the primitive's blocks, propagated back through the
primitive's internal buffers (padding, accumulators) to the feature maps it takes. The parts of a read box outside
the tensor are the operation's padding, so padding appears only at the tensor's borders. The NpuGraph op (found
through the blocks' OP_ANNOTATION) supplies what is not index arithmetic: weights, scales, rounding, activation.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from tvm import ir, s_tir, sym, tirx

from ..legalize.ops import Concatenate, Identity, NpuGraph, Pad, Padding, Pooling, Transpose, TransposeConv2D
from ..te import OP_ANNOTATION, TeGraph, te_graph
from .schedule import (
    RING_ANNOTATION,
    ROLLING_ANNOTATION,
    STRIPE_ANNOTATION,
    WARMUP_ANNOTATION,
    ScheduleFn,
    annotated_blocks,
    lower,
)
from .tir_regions import Access, Box, Interval, bound, hull, loads, logical, ring_axes, stores
from .vela_calls import CodegenError, describe


@dataclass(frozen=True)
class FeatureMapRegion:
    """A box of a feature-map tensor that one NPU operation reads or writes, and how its buffer lays it out.

    `layout` is the NHWC shape of the buffer (smaller than the tensor on `rings` axes, which wrap around it); `box` is
    in tensor coordinates and inside the tensor; `padding` counts the rows and columns of a read that fall outside.
    """

    tensor: str
    dtype: str
    layout: tuple[int, ...]
    rings: tuple[bool, ...]
    box: Box
    padding: Padding = Padding()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(interval.extent for interval in self.box)


@dataclass(frozen=True)
class Stripe:
    """The part of primitive `op` (its index in the NpuGraph) that one NPU operation computes; `ifms` follow the
    primitive's `inputs`, except for a concatenation, whose operations each copy one input (the one region), and a
    pad, whose operations copy the IFM or (no region) fill a box with the pad value."""

    op: int
    ofm: FeatureMapRegion
    ifms: tuple[FeatureMapRegion, ...]


Bindings = tuple[tuple[ir.expr.Var, int], ...]


def _analyzer(bindings: Bindings) -> sym.Analyzer:
    """An analyzer that replaces each unrolled stripe loop's variable by its value."""
    analyzer = sym.Analyzer()
    for var, value in bindings:
        analyzer.bind(var, tirx.IntImm(str(var.ty.dtype), value))
    return analyzer


def _holds_stripe_annotation(stmt) -> bool:
    if isinstance(stmt, tirx.For):
        return STRIPE_ANNOTATION in stmt.annotations or _holds_stripe_annotation(stmt.body)
    if isinstance(stmt, tirx.SeqStmt):
        return any(_holds_stripe_annotation(child) for child in stmt.seq)
    return False


def _constant(analyzer: sym.Analyzer, expr, what: str) -> int:
    value = analyzer.simplify(expr)
    if not isinstance(value, tirx.IntImm):
        raise CodegenError(f"{what} is not constant once the stripe loops are unrolled: {value}")
    return int(value)


class _Translator:
    """Walks one scheduled PrimFunc of an NpuGraph; buffers and blocks are known by name (TE names are unique)."""

    def __init__(self, func: tirx.PrimFunc, graph: NpuGraph, te_graph: TeGraph):
        self.func = func
        self.graph = graph
        self.buffer_of = {name: t.op.name for name, t in te_graph.tensors.items()}  # tensor name → buffer name
        self.tensor_of = {buffer: name for name, buffer in self.buffer_of.items()}
        # Logical shapes, as TE defined the buffers (a rolling buffer's is smaller than its tensor's).
        self.shapes = {t.op.name: tuple(int(d) for d in t.shape) for t in te_graph.tensors.values()}
        self.owner: dict[str, int] = {}  # block name → primitive index
        self.writer: dict[str, s_tir.SBlock] = {}  # buffer name → the block that stores it
        self.buffers: dict[str, ir.expr.Var] = {}
        # block name → its loads: every stripe of a block reads the same expressions, whose walk is slow (FFI)
        blocks = annotated_blocks(func.body)
        self.loads = {block.name_hint: loads(block) for block in blocks}
        for block in blocks:
            self.owner[block.name_hint] = int(block.annotations[OP_ANNOTATION])
            for access in stores(block) + self.loads[block.name_hint]:
                self._add_buffer(access.buffer)
            for access in stores(block):
                self.writer[access.buffer.name] = block
        for param in func.params:  # also inputs no load reads (see _read_box)
            self._add_buffer(param)
        self.output_of = {self.writer[self.buffer_of[op.ofm.tensor.name]].name_hint: index  # block → primitive
                          for index, op in enumerate(graph.ops)}
        # Ring axes as TIR writes them (floormod, from Schedule.rolling_buffer): analysed in logical coordinates.
        self.rings = {name: ring_axes(self.writer[name], self.buffers[name]) for name in self.tensor_of
                      if name in self.writer}
        self.layouts = {name: tuple(int(d) for d in var.shape) for name, var in self.buffers.items()}
        self.annotated_rings: set[str] = set()  # rings by RING_ANNOTATION: TIR indexes them logically already
        self.rolling: set[str] = set()
        for name in self.rings:
            annotations = self.writer[name].annotations
            if RING_ANNOTATION in annotations:
                rows = int(annotations[RING_ANNOTATION])
                self.annotated_rings.add(name)
                self.layouts[name] = (self.layouts[name][0], min(rows, self.layouts[name][1]), *self.layouts[name][2:])
            if ROLLING_ANNOTATION in annotations:
                self.rolling.add(name)
        self.written: dict[str, int] = {}  # ring buffer → the stop of the rows written so far

    def _add_buffer(self, buffer: ir.expr.Var) -> None:
        known = self.buffers.setdefault(buffer.name, buffer)
        if not known.same_as(buffer):
            raise CodegenError(f"{self.graph.name}: two TIR buffers are named {buffer.name}")

    # -- walking the schedule -------------------------------------------------------------------------------
    def stripes(self) -> Iterator[Stripe]:
        yield from self._walk(self.func.body.block.body, ())

    def _outputs(self, stmt) -> list[int]:
        return [self.output_of[b.name_hint] for b in annotated_blocks(stmt) if b.name_hint in self.output_of]

    def _walk(self, stmt, bindings: Bindings) -> Iterator[Stripe]:
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                yield from self._walk(child, bindings)
        elif isinstance(stmt, tirx.For):
            owners = self._outputs(stmt)
            if len(owners) > 1 or (owners and _holds_stripe_annotation(stmt)):
                yield from self._unroll(stmt, bindings)
            elif owners:
                yield from self._stripe(owners[0], stmt, bindings)
        elif isinstance(stmt, s_tir.SBlockRealize):
            if stmt.block.name_hint in self.output_of:
                yield from self._stripe(self.output_of[stmt.block.name_hint], stmt, bindings)
        else:
            raise CodegenError(f"{self.graph.name}: unexpected {type(stmt).__name__} in the scheduled TIR")

    def _unroll(self, loop: tirx.For, bindings: Bindings) -> Iterator[Stripe]:
        if loop.step is not None and not (isinstance(loop.step, tirx.IntImm) and int(loop.step) == 1):
            raise CodegenError(f"{self.graph.name}: stripe loop {loop.loop_var.name} has a step")
        analyzer = _analyzer(bindings)
        start = _constant(analyzer, loop.min, f"the start of loop {loop.loop_var.name}")
        extent = _constant(analyzer, loop.extent, f"the extent of loop {loop.loop_var.name}")
        warmup = int(loop.annotations.get(WARMUP_ANNOTATION, 0))
        for value in range(start - warmup, start + extent):
            yield from self._walk(loop.body, bindings + ((loop.loop_var, value),))

    @staticmethod
    def _path(stmt, block_name: str) -> tuple[list[tirx.For], s_tir.SBlockRealize]:
        """The loops from `stmt` down to the realize of block `block_name`, and that realize."""
        loops = []
        while not isinstance(stmt, s_tir.SBlockRealize):
            if isinstance(stmt, tirx.For):
                loops.append(stmt)
                stmt = stmt.body
            else:
                stmt = next(child for child in stmt.seq
                            if any(b.name_hint == block_name for b in annotated_blocks(child)))
        return loops, stmt

    # -- one operator instance ------------------------------------------------------------------------------
    def _stripe(self, index: int, stmt, bindings: Bindings) -> Iterator[Stripe]:
        """The operation computing what primitive `index`'s output block does under `stmt` (none in a warm-up
        stripe before its first row, or when a rolling buffer already holds all of it)."""
        op = self.graph.ops[index]
        what = describe(op)
        ofm_buffer = self.buffer_of[op.ofm.tensor.name]
        output = self.writer[ofm_buffer]
        loops, realize = self._path(stmt, output.name_hint)
        analyzer = _analyzer(bindings)
        domain = self._instance_domain(loops, realize, analyzer, what)
        (store,) = [s for s in stores(output) if s.buffer.name == ofm_buffer]
        domain = domain and self._rows_to_compute(ofm_buffer, store, domain, what)
        if domain is None:
            return
        ofm = self._region(ofm_buffer, bound(logical(store, self.rings[ofm_buffer]), domain, analyzer), what)
        if ofm.padding != Padding():
            raise CodegenError(f"{what}: the schedule writes outside the OFM")
        if isinstance(op, Concatenate):
            stripes = list(self._concatenated(index, op, ofm, what))
        elif isinstance(op, Pad):
            stripes = list(self._padded(index, op, ofm, what))
        elif isinstance(op, Transpose):
            stripes = [Stripe(index, ofm, (self._whole(op.ifm.tensor.name, what),))]
        elif isinstance(op, TransposeConv2D) or isinstance(op, Pooling) and op.upscale:
            stripes = [Stripe(index, ofm, (self._upscaled(op, ofm, what),))]
        else:
            reads = self._reads(index, output, domain, analyzer)
            ifm_buffers = [self.buffer_of[operand.tensor.name] for operand in op.inputs]
            ifms = tuple(self._region(buffer, self._read_box(reads, buffer, ofm_buffer, ofm, what), what)
                         for buffer in ifm_buffers)
            for ifm in ifms:
                self._check_ring_read(ifm, what)
            if isinstance(op, Identity) and self.shapes[ifm_buffers[0]] != self.shapes[ofm_buffer]:
                ifms = (self._reshaped(ifm_buffers[0], ifms[0], ofm_buffer, ofm, what),)
            stripes = [Stripe(index, ofm, ifms)]
        if any(ofm.rings):
            self.written[ofm_buffer] = max(self.written.get(ofm_buffer, 0), ofm.box[1].stop)
        yield from stripes

    def _concatenated(self, index: int, op: Concatenate, ofm: FeatureMapRegion, what: str) -> Iterator[Stripe]:
        """One copy per input that the OFM box overlaps along the axis: that overlap, read from the input at the
        box shifted back by the input's offset."""
        axis, span = op.axis, ofm.box[op.axis]
        for operand, start in zip(op.inputs, op.offsets):
            low, high = max(span.start, start), min(span.stop, start + operand.tensor.shape[axis])
            if low >= high:
                continue
            written = ofm.box[:axis] + (Interval(low, high),) + ofm.box[axis + 1:]
            read = ofm.box[:axis] + (Interval(low - start, high - start),) + ofm.box[axis + 1:]
            ifm = self._region(self.buffer_of[operand.tensor.name], read, what)
            self._check_ring_read(ifm, what)
            yield Stripe(index, replace(ofm, box=written), (ifm,))

    def _padded(self, index: int, op: Pad, ofm: FeatureMapRegion, what: str) -> Iterator[Stripe]:
        """The copy of the IFM part the OFM box holds, then fills of the rest of the box: along each axis in turn,
        the parts before and after the IFM's span (within its span on the axes before)."""
        box = ofm.box
        body = tuple(Interval(before, before + extent) for before, extent in zip(op.before, op.ifm.tensor.shape))
        inner = tuple(Interval(max(b.start, i.start), min(b.stop, i.stop)) for b, i in zip(box, body))
        if all(interval.extent > 0 for interval in inner):
            read = tuple(Interval(i.start - before, i.stop - before) for i, before in zip(inner, op.before))
            ifm = self._region(self.buffer_of[op.ifm.tensor.name], read, what)
            self._check_ring_read(ifm, what)
            yield Stripe(index, replace(ofm, box=inner), (ifm,))
        for axis in range(1, len(box)):
            span = box[axis]
            for side in (Interval(span.start, min(span.stop, body[axis].start)),
                         Interval(max(span.start, body[axis].stop), span.stop)):
                piece = inner[:axis] + (side,) + box[axis + 1:]
                if all(interval.extent > 0 for interval in piece):
                    yield Stripe(index, replace(ofm, box=piece), ())

    def _whole(self, tensor: str, what: str) -> FeatureMapRegion:
        """The region of a whole tensor in a buffer of its own shape (a transpose reads it with other strides)."""
        buffer = self.buffer_of[tensor]
        region = self._region(buffer, tuple(Interval(0, extent) for extent in self.shapes[buffer]), what)
        if region.layout != self.shapes[buffer]:
            raise CodegenError(f"{what}: {tensor} is not whole in its buffer")
        return region

    def _upscaled(self, op: TransposeConv2D | Pooling, ofm: FeatureMapRegion, what: str) -> FeatureMapRegion:
        """The whole IFM of an upscaled convolution or pool computing OFM rows and columns whole: its padding is
        the primitive's, around the upscaled IFM (the read box the TIR shows is in the IFM's own rows, halved)."""
        if ofm.box[1:3] != tuple(Interval(0, extent) for extent in op.ofm.tensor.shape[1:3]):
            raise CodegenError(f"{what}: an upscaled operation computes its OFM rows and columns whole")
        return replace(self._whole(op.ifm.tensor.name, what), padding=op.padding)

    def _read_box(self, reads: dict[str, Box], buffer: str, ofm_buffer: str, ofm: FeatureMapRegion,
                  what: str) -> Box:
        """The box of `buffer` an operation reads. TVM's simplifier folds away the loads of an operand that cancels
        itself (x − x): the NPU still reads it, elementwise, where it writes the OFM."""
        if buffer in reads:
            return reads[buffer]
        if self.shapes[buffer] != self.shapes[ofm_buffer]:
            raise CodegenError(f"{what}: its arithmetic does not read {self.tensor_of[buffer]}")
        return ofm.box

    def _rows_to_compute(self, buffer: str, store: Access, domain: dict, what: str) -> dict | None:
        """`domain` limited to the OFM's rows (a warm-up stripe reaches before them), and for a rolling buffer to
        the rows no earlier stripe wrote; None when nothing is left to compute."""
        row = store.indices[1]
        var = next((v for v in domain if v.same_as(row)), None)
        if var is None:
            if buffer in self.rolling:
                raise CodegenError(f"{what}: a rolling OFM must be stored at a block variable, not at row {row}")
            return domain
        start, stop = int(domain[var].min), int(domain[var].min) + int(domain[var].extent)
        start = max(start, 0, self.written.get(buffer, 0) if buffer in self.rolling else 0)
        stop = min(stop, self.shapes[buffer][1])
        if start >= stop:
            return None
        return {**domain, var: ir.Range.from_min_extent(start, stop - start)}

    def _check_ring_read(self, ifm: FeatureMapRegion, what: str) -> None:
        """A ring of R rows holds the last R rows written; a read of any other row would find stale data."""
        if len(ifm.rings) < 2 or not ifm.rings[1]:
            return
        rows, written = ifm.layout[1], self.written.get(self.buffer_of[ifm.tensor], 0)
        if ifm.box[1].stop > written or ifm.box[1].start < written - rows:
            raise CodegenError(f"{what}: reads rows [{ifm.box[1].start}, {ifm.box[1].stop}) of {ifm.tensor}, but "
                               f"its {rows}-row ring holds rows [{max(written - rows, 0)}, {written})")

    @staticmethod
    def _instance_domain(loops, realize: s_tir.SBlockRealize, analyzer: sym.Analyzer, what: str) -> dict | None:
        """The range of each of the block's variables over `loops`; it must be an exact box (no holes, nothing
        outside), or one NPU operation could not compute it. None when the predicate leaves no instance (a
        warm-up stripe before a producer's first row)."""
        loop_domain = {
            loop.loop_var: ir.Range.from_min_extent(_constant(analyzer, loop.min, f"{what}: a loop start"),
                                                    _constant(analyzer, loop.extent, f"{what}: a loop extent"))
            for loop in loops
        }
        region = [ir.Range.from_min_extent(analyzer.simplify(value), 1) for value in realize.iter_values]
        predicate = analyzer.simplify(realize.predicate)
        if isinstance(predicate, tirx.IntImm) and not int(predicate):
            return None  # TVM's bound estimate gives up on a predicate that is constant false
        sets = sym.estimate_region_strict_bound(region, loop_domain, predicate, analyzer)
        if sets is None:
            raise CodegenError(f"{what}: an instance of block {realize.block.name_hint} is not a dense box, "
                               "which one NPU operation cannot compute")
        if any(interval.is_nothing() for interval in sets):
            return None
        domain = {}
        for iter_var, interval in zip(realize.block.iter_vars, sets):
            low = _constant(analyzer, interval.min_value, f"{what}: a block bound")
            high = _constant(analyzer, interval.max_value, f"{what}: a block bound")
            domain[iter_var.var] = ir.Range.from_min_extent(low, high - low + 1)
        return domain

    def _reads(self, index: int, block: s_tir.SBlock, domain: dict, analyzer: sym.Analyzer) -> dict[str, Box]:
        """Boxes of the feature maps that `block` of primitive `index` needs over `domain`, following the
        primitive's internal buffers back to the feature maps they are computed from. Constants (weights, scales,
        lookup tables) are not feature maps and are left out."""
        written = {access.buffer.name for access in stores(block)}  # an accumulator reads itself
        boxes: dict[str, Box] = {}
        for access in self.loads[block.name_hint]:
            name = access.buffer.name
            if name in written or not (name in self.tensor_of or self._internal(index, name)):
                continue
            rings = self.rings.get(name, (False,) * len(access.indices))
            box = bound(logical(access, rings), domain, analyzer)
            boxes[name] = hull(boxes[name], box) if name in boxes else box
        found: dict[str, Box] = {}
        for name, box in boxes.items():
            if name in self.tensor_of:
                needed = {name: box}
            else:
                producer = self.writer[name]
                needed = self._reads(index, producer, self._write_domain(producer, name, box), analyzer)
            for key, value in needed.items():
                found[key] = hull(found[key], value) if key in found else value
        return found

    def _internal(self, index: int, buffer: str) -> bool:
        """Is `buffer` one that primitive `index` computes on the way to its OFM (padded IFM, accumulator)?"""
        return buffer in self.writer and self.owner[self.writer[buffer].name_hint] == index

    @staticmethod
    def _write_domain(block: s_tir.SBlock, buffer: str, box: Box) -> dict:
        """The domain of an internal block that produces `box` of `buffer`: its stores index the buffer by its
        spatial variables; its reduction variables keep their full range."""
        domain = {iter_var.var: iter_var.dom for iter_var in block.iter_vars}
        (store,) = [s for s in stores(block) if s.buffer.name == buffer]
        for index, interval in zip(store.indices, box):
            var = next((v for v in domain if v.same_as(index)), None)
            if var is None:
                raise CodegenError(f"block {block.name_hint} stores {buffer} at {index}, not at a block variable")
            domain[var] = ir.Range.from_min_extent(interval.start, interval.extent)
        return domain

    def _region(self, buffer: str, box: Box, what: str) -> FeatureMapRegion:
        """The feature-map region of a box: clipped to the tensor, the clipped rows and columns as padding."""
        var = self.buffers[buffer]
        tensor = self.tensor_of[buffer]
        shape = self.shapes[buffer]
        clipped = tuple(Interval(max(i.start, 0), min(i.stop, extent)) for i, extent in zip(box, shape))
        if any(c.extent <= 0 for c in clipped) or box[0] != clipped[0] or box[3] != clipped[3]:
            raise CodegenError(f"{what}: the schedule accesses {box} of {tensor}, beyond the tensor {shape} "
                               "on batch or depth, or entirely outside it")
        padding = Padding(top=clipped[1].start - box[1].start, left=clipped[2].start - box[2].start,
                          bottom=box[1].stop - clipped[1].stop, right=box[2].stop - clipped[2].stop)
        rings = self.rings.get(buffer, (False,) * len(shape))
        if buffer in self.annotated_rings:
            rings = (False, True) + (False,) * (len(shape) - 2)
        return FeatureMapRegion(tensor, str(var.dtype), self.layouts[buffer], rings, clipped, padding)

    def _reshaped(self, ifm_buffer: str, ifm: FeatureMapRegion, ofm_buffer: str, ofm: FeatureMapRegion,
                  what: str) -> FeatureMapRegion:
        """A reshape keeps NHWC element order, so it is a byte copy: its IFM is the IFM buffer viewed in the OFM
        tensor's shape, read at the OFM's box. That needs the whole IFM tensor in its buffer."""
        if ifm.layout != self.shapes[ifm_buffer]:
            raise CodegenError(f"{what}: a reshape needs its whole IFM in one buffer, not a {ifm.layout} one")
        shape = self.shapes[ofm_buffer]
        return FeatureMapRegion(ifm.tensor, ifm.dtype, shape, (False,) * len(shape), ofm.box)


def translate(graph: NpuGraph, schedule: ScheduleFn | None = None) -> list[Stripe]:
    """The NPU operations of `graph`'s TIR with `schedule` applied (None: one per primitive), in execution order."""
    graph_te = te_graph(graph)
    return list(_Translator(lower(graph_te, schedule), graph, graph_te).stripes())
