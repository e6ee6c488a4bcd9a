"""`operators.CONVERTERS` is the one place that says which module converts each TFLite operator: every converter
our modules define is in it under its own class (and the converter TVM runs calls the table's, or fails to build)."""
from ethosu_tvm.frontend.converter import ConverterCore
from ethosu_tvm.frontend.operators import CONVERTERS, Converter


def test_every_converter_of_ours_is_in_the_table_under_its_class():
    defined = {name[len("convert_"):].upper(): cls for cls in Converter.__mro__
               if issubclass(cls, ConverterCore) and cls not in (Converter, ConverterCore)
               for name in vars(cls) if name.startswith("convert_")}
    assert len(defined) > 30
    assert defined == CONVERTERS
