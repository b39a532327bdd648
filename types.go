package gccl

import "fmt"

// DataType is the element type of a buffer, as NCCL's ncclDataType_t.
type DataType int

// The data types, in NCCL's order.
const (
	Int8 DataType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Float16
	Float32
	Float64
	BFloat16
	Float8E4M3
	Float8E5M2
	numDataTypes
)

var dataTypeInfo = [numDataTypes]struct {
	name string
	size int
}{
	Int8: {"int8", 1}, Uint8: {"uint8", 1}, Int32: {"int32", 4}, Uint32: {"uint32", 4},
	Int64: {"int64", 8}, Uint64: {"uint64", 8}, Float16: {"float16", 2}, Float32: {"float32", 4},
	Float64: {"float64", 8}, BFloat16: {"bfloat16", 2}, Float8E4M3: {"fp8e4m3", 1}, Float8E5M2: {"fp8e5m2", 1},
}

// DataTypes lists every data type.
func DataTypes() []DataType {
	ts := make([]DataType, numDataTypes)
	for i := range ts {
		ts[i] = DataType(i)
	}
	return ts
}

// Valid reports whether t is a known data type.
func (t DataType) Valid() bool { return t >= 0 && t < numDataTypes }

// Size is the size of one element in bytes (0 for an invalid type).
func (t DataType) Size() int {
	if !t.Valid() {
		return 0
	}
	return dataTypeInfo[t].size
}

// IsFloat reports whether t is a floating-point type.
func (t DataType) IsFloat() bool {
	switch t {
	case Float16, Float32, Float64, BFloat16, Float8E4M3, Float8E5M2:
		return true
	}
	return false
}

func (t DataType) String() string {
	if !t.Valid() {
		return fmt.Sprintf("DataType(%d)", int(t))
	}
	return dataTypeInfo[t].name
}

// ParseDataType returns the data type with the given name (as String prints it).
func ParseDataType(name string) (DataType, error) {
	for _, t := range DataTypes() {
		if t.String() == name {
			return t, nil
		}
	}
	return 0, Errorf(InvalidArgument, "datatype", "unknown data type %q", name)
}

// RedOp is a reduction operator, as NCCL's ncclRedOp_t. Values from
// NumBuiltinOps on are per-communicator operators such as those made by
// comm.Comm.CreatePreMulSum.
type RedOp int

// The built-in reduction operators.
const (
	Sum RedOp = iota
	Prod
	Max
	Min
	Avg
	NumBuiltinOps
)

var redOpNames = [...]string{"sum", "prod", "max", "min", "avg"}

// RedOps lists the built-in operators.
func RedOps() []RedOp { return []RedOp{Sum, Prod, Max, Min, Avg} }

func (o RedOp) String() string {
	if o >= 0 && o < NumBuiltinOps {
		return redOpNames[o]
	}
	return fmt.Sprintf("premulsum(%d)", int(o))
}

// ParseRedOp returns the built-in operator with the given name.
func ParseRedOp(name string) (RedOp, error) {
	for _, o := range RedOps() {
		if o.String() == name {
			return o, nil
		}
	}
	return 0, Errorf(InvalidArgument, "op", "unknown reduction operator %q", name)
}

// Stream orders work on a device: a CUstream handle on a GPU (0 is the legacy
// default stream), a host stream handle from device.Device.NewStream on the host.
type Stream uintptr
