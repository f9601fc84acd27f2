"""A context manager that doubles as a decorator (grad modes, anomaly mode)."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any


class DecoratorContextManager:
    """A context manager that also works as a decorator, with or without parentheses."""

    def __call__(self, func: Callable) -> Callable:
        if inspect.isclass(func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing "
                "else.", FutureWarning, stacklevel=2)
            cls = func

            def func(*args: Any, **kwargs: Any) -> Any:
                return cls(*args, **kwargs)
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = func(*args, **kwargs)
                with self.clone():
                    value = next(gen)
                while True:
                    try:
                        sent = yield value
                        with self.clone():
                            value = gen.send(sent)
                    except StopIteration as stop:
                        return stop.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self) -> DecoratorContextManager:
        return self.__class__()
