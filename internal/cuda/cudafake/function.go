package cudafake

import "github.com/gccl/gccl/internal/cuda"

// SetLocalBytes sets the stack (local memory) a thread of kernel name
// needs, which FuncAttribute reports (0 unless set).
func (f *Fake) SetLocalBytes(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.localBytes[name] = n
}

// Loaded reports whether FuncLoad loaded kernel name.
func (f *Fake) Loaded(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loaded[name]
}

// funcName is the kernel of fn (f.mu held).
func (f *Fake) funcName(call string, fn cuda.Function) (string, error) {
	name, ok := f.funcs[fn]
	if !ok {
		return "", fail(call, cuda.ErrorInvalidHandle)
	}
	return name, nil
}

func (f *Fake) FuncLoad(fn cuda.Function) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name, err := f.funcName("cuFuncLoad", fn)
	if err == nil {
		f.loaded[name] = true
	}
	return err
}

func (f *Fake) FuncAttribute(attr cuda.FuncAttr, fn cuda.Function) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name, err := f.funcName("cuFuncGetAttribute", fn)
	if err != nil {
		return 0, err
	}
	if attr == cuda.FuncLocalSizeBytes {
		return f.localBytes[name], nil
	}
	return 0, nil
}

func (f *Fake) CtxLimit(l cuda.Limit) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l != cuda.LimitStackSize {
		return 0, fail("cuCtxGetLimit", cuda.ErrorInvalidValue)
	}
	return f.stackLimit, nil
}

func (f *Fake) CtxSetLimit(l cuda.Limit, v int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l != cuda.LimitStackSize || v < 0 {
		return fail("cuCtxSetLimit", cuda.ErrorInvalidValue)
	}
	f.stackLimit = v
	return nil
}
